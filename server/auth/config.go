package auth

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml"
)

// PrincipalConfig is one principal of an --auth-config file.
type PrincipalConfig struct {
	Name  string `json:"name" yaml:"name"`
	Token string `json:"token" yaml:"token"`
	Role  string `json:"role" yaml:"role"`
}

// File is the --auth-config document: YAML or JSON (JSON is valid YAML).
type File struct {
	Principals []PrincipalConfig `json:"principals" yaml:"principals"`
}

var envRef = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}`)

// LoadFile reads an --auth-config file. Tokens may reference environment
// variables as ${env:NAME}, so the file itself can be committed without
// secrets; lookup resolves them (os.LookupEnv in production).
func LoadFile(path string, lookup func(string) (string, bool)) (*Authenticator, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read auth config: %w", err)
	}
	var f File
	if err := yaml.UnmarshalWithOptions(data, &f, yaml.DisallowUnknownField()); err != nil {
		return nil, fmt.Errorf("parse auth config %s: %s", path, yaml.FormatError(err, false, true))
	}
	for i := range f.Principals {
		tok, err := interpolate(f.Principals[i].Token, lookup)
		if err != nil {
			return nil, fmt.Errorf("auth config %s: principals[%d] (%s): %w", path, i, f.Principals[i].Name, err)
		}
		f.Principals[i].Token = tok
	}
	a, err := New(f.Principals)
	if err != nil {
		return nil, fmt.Errorf("auth config %s: %w", path, err)
	}
	return a, nil
}

func interpolate(s string, lookup func(string) (string, bool)) (string, error) {
	var missing []string
	out := envRef.ReplaceAllStringFunc(s, func(m string) string {
		name := envRef.FindStringSubmatch(m)[1]
		v, ok := lookup(name)
		if !ok {
			missing = append(missing, name)
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("token references unset environment variable %s", strings.Join(missing, ", "))
	}
	return out, nil
}

// EnsureAdminToken returns the admin token stored at path, creating it (mode
// 0600, 32 random bytes hex-encoded) when the file does not exist. created
// tells the caller to show the new token once.
func EnsureAdminToken(path string) (token string, created bool, err error) {
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		token = strings.TrimSpace(string(data))
		if token == "" {
			return "", false, fmt.Errorf("admin token file %s is empty; delete it to create a new token", path)
		}
		if fi, statErr := os.Stat(path); statErr == nil && fi.Mode().Perm()&0o077 != 0 {
			return "", false, fmt.Errorf("admin token file %s is readable by other users (mode %v); run chmod 600 on it", path, fi.Mode().Perm())
		}
		return token, false, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", false, fmt.Errorf("read admin token: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", false, fmt.Errorf("create admin token directory: %w", err)
	}
	buf := make([]byte, 32)
	if _, err := rand.Read(buf); err != nil {
		return "", false, fmt.Errorf("generate admin token: %w", err)
	}
	token = hex.EncodeToString(buf)
	// Write a private temp file, then hard-link it into place: the link fails
	// when the file exists, so of two servers starting at once exactly one
	// creates (and prints) the token, and the other reads a complete file.
	tmp, err := os.CreateTemp(filepath.Dir(path), ".admin-token-*")
	if err != nil {
		return "", false, fmt.Errorf("create admin token: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return "", false, fmt.Errorf("create admin token: %w", err)
	}
	if _, err := tmp.WriteString(token + "\n"); err != nil {
		tmp.Close()
		return "", false, fmt.Errorf("write admin token: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", false, fmt.Errorf("write admin token: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return EnsureAdminToken(path)
		}
		return "", false, fmt.Errorf("store admin token: %w", err)
	}
	return token, true, nil
}
