package auth

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestAuthenticateBearerOnly(t *testing.T) {
	t.Parallel()
	a, err := New([]PrincipalConfig{
		{Name: "ci", Token: "tok-operator", Role: "operator"},
		{Name: "dash", Token: "tok-viewer", Role: "viewer"},
	})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		header string
		want   string
		ok     bool
	}{
		{"Bearer tok-operator", "ci", true},
		{"bearer  tok-viewer ", "dash", true},
		{"Bearer tok-operatorX", "", false},
		{"Basic tok-operator", "", false},
		{"tok-operator", "", false},
		{"Bearer ", "", false},
		{"", "", false},
	}
	for _, c := range cases {
		p, ok := a.Authenticate(c.header)
		if ok != c.ok || p.Name != c.want {
			t.Errorf("Authenticate(%q) = %q, %v; want %q, %v", c.header, p.Name, ok, c.want, c.ok)
		}
	}
	if !a.Enabled() {
		t.Error("token auth must be enabled")
	}
	if got := a.Secrets(); len(got) != 2 {
		t.Errorf("Secrets = %v", got)
	}
}

func TestRolesAreOrdered(t *testing.T) {
	t.Parallel()
	if !Admin.Allows(Operator) || !Operator.Allows(Viewer) || Viewer.Allows(Operator) || Operator.Allows(Admin) {
		t.Fatal("role order must be viewer < operator < admin")
	}
	for _, r := range []Role{Viewer, Operator, Admin} {
		got, err := ParseRole(r.String())
		if err != nil || got != r {
			t.Errorf("ParseRole(%q) = %v, %v", r.String(), got, err)
		}
	}
	if _, err := ParseRole("root"); err == nil {
		t.Error("unknown role must be rejected")
	}
}

func TestNewRejectsBadPrincipals(t *testing.T) {
	t.Parallel()
	cases := map[string][]PrincipalConfig{
		"no principals":  nil,
		"empty token":    {{Name: "a", Token: "", Role: "admin"}},
		"duplicate name": {{Name: "a", Token: "x", Role: "admin"}, {Name: "a", Token: "y", Role: "viewer"}},
		"shared token":   {{Name: "a", Token: "x", Role: "admin"}, {Name: "b", Token: "x", Role: "viewer"}},
		"bad role":       {{Name: "a", Token: "x", Role: "root"}},
		"empty name":     {{Name: " ", Token: "x", Role: "admin"}},
	}
	for name, ps := range cases {
		if _, err := New(ps); err == nil {
			t.Errorf("%s: New succeeded", name)
		}
	}
}

func TestDisabledAdmitsAnonymousAdmin(t *testing.T) {
	t.Parallel()
	a := Disabled()
	p, ok := a.Authenticate("")
	if !ok || p != Anonymous || p.Role != Admin || a.Enabled() {
		t.Fatalf("Disabled().Authenticate = %+v, %v", p, ok)
	}
}

func TestLoadFileYAMLAndJSONWithEnv(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := map[string]string{"OPS_TOKEN": "from-env"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }

	yml := filepath.Join(dir, "auth.yaml")
	os.WriteFile(yml, []byte("principals:\n  - name: ops\n    token: ${env:OPS_TOKEN}\n    role: operator\n  - name: boss\n    token: literal\n    role: admin\n"), 0o600)
	a, err := LoadFile(yml, lookup)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := a.Authenticate("Bearer from-env"); !ok || p.Name != "ops" || p.Role != Operator {
		t.Fatalf("env token: %+v %v", p, ok)
	}

	js := filepath.Join(dir, "auth.json")
	os.WriteFile(js, []byte(`{"principals":[{"name":"v","token":"t","role":"viewer"}]}`), 0o600)
	if a, err = LoadFile(js, lookup); err != nil {
		t.Fatal(err)
	}
	if p, ok := a.Authenticate("Bearer t"); !ok || p.Role != Viewer {
		t.Fatalf("json token: %+v %v", p, ok)
	}

	missing := filepath.Join(dir, "missing.yaml")
	os.WriteFile(missing, []byte("principals:\n  - name: x\n    token: ${env:NOPE}\n    role: admin\n"), 0o600)
	if _, err := LoadFile(missing, lookup); err == nil || !strings.Contains(err.Error(), "NOPE") {
		t.Fatalf("missing env var: %v", err)
	}

	unknown := filepath.Join(dir, "unknown.yaml")
	os.WriteFile(unknown, []byte("principals:\n  - name: x\n    tokn: y\n    role: admin\n"), 0o600)
	if _, err := LoadFile(unknown, lookup); err == nil || !strings.Contains(err.Error(), "tokn") {
		t.Fatalf("unknown key: %v", err)
	}
}

func TestEnsureAdminTokenCreatesOnceWithMode0600(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sub", "history.db.token")
	const n = 8
	var wg sync.WaitGroup
	tokens := make([]string, n)
	created := make([]bool, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tokens[i], created[i], errs[i] = EnsureAdminToken(path)
		}()
	}
	wg.Wait()
	creators := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		if tokens[i] != tokens[0] || len(tokens[i]) != 64 {
			t.Fatalf("token %d = %q, want the same 64-hex token as %q", i, tokens[i], tokens[0])
		}
		if created[i] {
			creators++
		}
	}
	if creators != 1 {
		t.Fatalf("%d callers created the token, want exactly 1", creators)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v, want 0600", fi.Mode().Perm())
	}
	again, made, err := EnsureAdminToken(path)
	if err != nil || made || again != tokens[0] {
		t.Fatalf("reuse: %q %v %v", again, made, err)
	}
	os.Chmod(path, 0o644)
	if _, _, err := EnsureAdminToken(path); err == nil {
		t.Fatal("a world-readable token file must be refused")
	}
}
