package envpolicy_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/server/envpolicy"
)

func TestPolicy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "faucet.env")
	if err := os.WriteFile(file, []byte(`# the warehouse
export WAREHOUSE_URL="postgres://u:p@w/db"
API_KEY='abc$def'
PLAIN=one two # a comment
SHARED=from-file
QUOTED="a\"b\nc"
`), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := envpolicy.New(envpolicy.Config{
		Names: []string{"PG_URL", "APP_*"}, EnvFile: file,
		Environ: []string{"PG_URL=pg-secret", "APP_TOKEN=app-secret", "AWS_SECRET_ACCESS_KEY=aws-secret", "SHARED=from-process", "EMPTY="},
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"PG_URL": "pg-secret", "APP_TOKEN": "app-secret", "WAREHOUSE_URL": "postgres://u:p@w/db",
		"API_KEY": "abc$def", "PLAIN": "one two", "SHARED": "from-process", "QUOTED": "a\"b\nc",
	} {
		if err := p.Allowed(name); err != nil {
			t.Errorf("%s refused: %v", name, err)
		}
		if got, ok := p.Lookup(name); !ok || got != want {
			t.Errorf("Lookup(%s) = %q, %v; want %q", name, got, ok, want)
		}
	}
	for _, name := range []string{"AWS_SECRET_ACCESS_KEY", "HOME", "EMPTY", "APP"} {
		err := p.Allowed(name)
		if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "--config-env") {
			t.Errorf("Allowed(%s) = %v, want a refusal naming it and the flag", name, err)
		}
		if v, ok := p.Lookup(name); ok {
			t.Errorf("Lookup(%s) resolved a refused name to %q", name, v)
		}
	}
	if v, ok := p.LookupAny("AWS_SECRET_ACCESS_KEY"); !ok || v != "aws-secret" {
		t.Errorf("LookupAny = %q, %v", v, ok)
	}
	values := p.Values()
	for _, v := range []string{"pg-secret", "app-secret", "postgres://u:p@w/db", "abc$def", "from-process"} {
		if !slices.Contains(values, v) {
			t.Errorf("Values lacks %q: %q", v, values)
		}
	}
	if slices.Contains(values, "aws-secret") || slices.Contains(values, "from-file") {
		t.Errorf("Values holds a value no config can read: %q", values)
	}
}

func TestDefaultEnvFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("FROM_DOTENV=yes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := envpolicy.New(envpolicy.Config{Dir: dir, Environ: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := p.Lookup("FROM_DOTENV"); !ok || v != "yes" || p.EnvFile() != filepath.Join(dir, ".env") {
		t.Errorf("the default .env was not read: %q %v %q", v, ok, p.EnvFile())
	}
	p, err = envpolicy.New(envpolicy.Config{Dir: dir, NoEnvFile: true, Environ: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.Lookup("FROM_DOTENV"); ok || p.EnvFile() != "" {
		t.Error("--no-env-file read the default .env")
	}
}

func TestBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.env")
	if err := os.WriteFile(bad, []byte("OK=1\nthis is not an assignment hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cfg  envpolicy.Config
		want string
	}{
		{envpolicy.Config{Names: []string{"BAD-NAME"}}, "not an environment variable name"},
		{envpolicy.Config{Names: []string{"A*B*"}}, "pattern"},
		{envpolicy.Config{EnvFile: filepath.Join(dir, "missing.env")}, "no such file"},
		{envpolicy.Config{EnvFile: bad}, "line 2"},
		{envpolicy.Config{EnvFile: bad, NoEnvFile: true}, "choose one"},
	} {
		_, err := envpolicy.New(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error saying %q", tc.cfg, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("the error shows the env file's text: %v", err)
		}
	}
}
