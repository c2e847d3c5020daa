// Package openapi_test checks the committed OpenAPI documents: they match
// what the server's code describes, and they generate working SDKs.
package openapi_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/faucet-dev/faucet/server/api"
)

// TestDocumentsMatchTheCode fails when the committed documents drift from
// the API's Go types (regenerate with `task generate:openapi`).
func TestDocumentsMatchTheCode(t *testing.T) {
	t.Parallel()
	v31, err := api.Document("3.1")
	if err != nil {
		t.Fatal(err)
	}
	v30, err := api.Document("3.0")
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string][]byte{"openapi.yaml": v31, "openapi-3.0.yaml": v30} {
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run `task generate:openapi` and commit the result", file)
		}
	}
}

// TestTypeScriptSDKCompiles generates TypeScript types from the 3.1 document
// with openapi-typescript and compiles a client file against them with tsc.
// The packages come from the npm registry at the versions package-lock.json
// pins.
func TestTypeScriptSDKCompiles(t *testing.T) {
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatal("npm is required to check the TypeScript SDK: install Node.js and npm (the README's test command does when it may)")
	}
	dir := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json", "check.ts"} {
		data, err := os.ReadFile(filepath.Join("sdkcheck", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	doc, err := filepath.Abs("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	run := func(name string, args ...string) {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %v: %v\n%s", name, args, err, out)
		}
	}
	// The lockfile pins every transitive package, so the check is the same
	// on every machine.
	run(npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	bin := filepath.Join(dir, "node_modules", ".bin")
	run(filepath.Join(bin, "openapi-typescript"), doc, "--output", "schema.d.ts")
	run(filepath.Join(bin, "tsc"), "--strict", "--noEmit", "--target", "es2020", "--module", "es2020", "--moduleResolution", "node", "check.ts")
}
