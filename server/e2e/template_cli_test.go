package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTemplateCommands drives faucet template through a template's life
// against a real server, with the address and token from the environment
// as faucet runs takes them, in table and JSON output.
func TestTemplateCommands(t *testing.T) {
	t.Parallel()
	s := start(t, serverOpts{})
	home, dir := t.TempDir(), t.TempDir()
	env := []string{"FAUCET_SERVER=" + strings.TrimPrefix(s.url, "http://"), "FAUCET_TOKEN=" + adminToken}
	file := filepath.Join(dir, "tenant-sync.yaml")
	if err := os.WriteFile(file, []byte(templateConfig(dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	tpl := func(args ...string) cliResult {
		t.Helper()
		return cli(t, home, env, append([]string{"template"}, args...)...)
	}
	says := func(r cliResult, what string, code int, words ...string) {
		t.Helper()
		if r.code != code {
			t.Fatalf("%s exited %d, want %d\n%s%s", what, r.code, code, r.stdout, r.stderr)
		}
		for _, w := range words {
			if !strings.Contains(r.stdout+r.stderr, w) {
				t.Fatalf("%s does not say %q\n%s%s", what, w, r.stdout, r.stderr)
			}
		}
	}

	says(tpl("register", file, "--tag", "dev"), "register", 0, "template tenant-sync version 1 registered")
	says(tpl("list"), "list", 0, "ID", "STATUS", "tenant-sync", "draft", "dev=1", "Tenant Sync")
	says(tpl("show", "tenant-sync"), "show of a draft", 1, "409 conflict", "no launched version")
	says(tpl("show", "tenant-sync", "--version", "newest"), "show --version newest", 0,
		"status:", "draft", "param tenant:", "string, required: Tenant to sync", "param count:", "default 3", "---\nversion: 1\nname: Tenant Sync")
	says(tpl("launch", "tenant-sync"), "launch", 0, "template tenant-sync version 1 is live")
	says(tpl("register", file, "--id", "tenant-sync", "--output", "json"), "register --output json", 0, `"version": 2`)
	says(tpl("promote", "tenant-sync", "prod", "1"), "promote", 0, "channel prod is version 1")
	says(tpl("promote", "tenant-sync", "stable", "1"), "promote to a derived channel", 1, "422", "derived")
	says(tpl("launch", "tenant-sync", "2"), "launch 2", 0, "version 2 is live (replacing version 1)")
	says(tpl("rollback", "tenant-sync"), "rollback", 0, "version 1 is live (replacing version 2)")
	says(tpl("deprecate", "tenant-sync", "--version", "2", "--reason", "slow"), "deprecate --version", 0, "version 2 of template tenant-sync deprecated")
	says(tpl("run", "tenant-sync", "--version", "2", "--param", "tenant=x"), "run of a deprecated version", 1, "409 conflict", "slow")
	says(tpl("run", "tenant-sync", "--param", "tenant"), "run --param without a value", 2, "want name=value")
	says(tpl("run", "tenant-sync", "--param", "count=7"), "run without a required param", 1, "400 bad_config", "param tenant")

	r := tpl("run", "tenant-sync", "--param", "tenant=cli", "--param", "count=5", "--wait", "--output", "json")
	says(r, "run --wait", 0)
	var rec struct {
		Status          string            `json:"status"`
		RecordsWritten  int               `json:"records_written"`
		TemplateID      string            `json:"template_id"`
		TemplateVersion int               `json:"template_version"`
		Labels          map[string]string `json:"labels"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rec); err != nil || rec.Status != "completed" || rec.RecordsWritten != 5 || rec.TemplateID != "tenant-sync" ||
		rec.TemplateVersion != 1 || rec.Labels["template"] != "tenant-sync" {
		t.Fatalf("run --wait printed %q (%v)", r.stdout, err)
	}
	if r := cli(t, home, env, "runs", "list", "--template", "tenant-sync", "-q").ok(t, "runs list --template"); len(strings.Fields(r.stdout)) != 1 {
		t.Fatalf("runs list --template printed %q, want the one run", r.stdout)
	}

	says(tpl("deprecate", "tenant-sync", "--reason", "retired"), "deprecate", 0, "template tenant-sync deprecated; the template is deprecated")
	var list []map[string]any
	if r := tpl("list", "--output", "json"); r.code != 0 || json.Unmarshal([]byte(r.stdout), &list) != nil || len(list) != 0 {
		t.Fatalf("list of deprecated templates only: %+v", r)
	}
	says(tpl("list", "--include-deprecated"), "list --include-deprecated", 0, "tenant-sync", "deprecated")
	says(tpl("deprecate", "tenant-sync", "--undo"), "deprecate --undo", 0, "revived; the template is launched")
	says(tpl("delete", "tenant-sync", "--version", "2"), "delete --version", 0, "version 2 of template tenant-sync deleted")
	says(tpl("delete", "tenant-sync", "--output", "json"), "delete", 0, `"deleted": true`)
	says(tpl("show", "tenant-sync", "--version", "1"), "show of a deleted template", 1, "404 not_found")
}
