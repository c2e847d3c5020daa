package e2e

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/openapi/client"
)

// TestLocalOutputsLedger: every file a run wrote is in the ledger, and an
// admin deletes exactly the one recorded, keeping the entry.
func TestLocalOutputsLedger(t *testing.T) {
	eachHistory(t, func(t *testing.T, h history) {
		root := realTempDir(t)
		authFile := filepath.Join(t.TempDir(), "auth.yaml")
		if err := os.WriteFile(authFile, []byte("principals:\n  - {name: otto, token: operator-token-123, role: operator}\n  - {name: vera, token: viewer-token-789, role: viewer}\n  - {name: ada, token: admin-token-456, role: admin}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		s := start(t, serverOpts{history: h.url(t), token: "admin-token-456", args: []string{"--auth-config", authFile, "--file-root", root}})
		ctx := context.Background()
		admin, operator, viewer := s.admin(), s.client("operator-token-123"), s.client("viewer-token-789")
		if err := os.WriteFile(filepath.Join(root, "existing.jsonl"), []byte("{\"old\":true}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		// One run, two rows: a file it replaces, a csv and a sqlite database
		// it creates.
		id := s.submit(client.SubmitRequest{Config: `version: 1
pipeline:
  source: {type: generate, config: {count: 5}}
  sink: {type: jsonl, config: {path: existing.jsonl}}
matrix:
  - id: replace
  - id: csv
    sink: {type: csv, config: {path: new/out.csv}}
  - id: sqlite
    sink: {type: sqlite, config: {path: new/out.db, table: t}}
`}).RunId
		s.await(id, client.RunStatusCompleted)
		list := func(c *client.ClientWithResponses, p *client.ListLocalOutputsParams) client.LocalOutputList {
			t.Helper()
			r, err := c.ListLocalOutputsWithResponse(ctx, p)
			if err != nil || r.JSON200 == nil {
				t.Fatalf("list local outputs: %v %d %s", err, r.StatusCode(), r.Body)
			}
			return *r.JSON200
		}
		got := map[string]client.LocalOutput{}
		for _, o := range list(viewer, &client.ListLocalOutputsParams{RunId: &id}).Outputs {
			got[o.Path] = o
		}
		for path, existed := range map[string]bool{"existing.jsonl": true, "new/out.csv": false, "new/out.db": false} {
			full := filepath.Join(root, path)
			o, ok := got[full]
			if !ok {
				t.Fatalf("the ledger lacks %s: %+v", full, got)
			}
			fi, err := os.Stat(full)
			if err != nil {
				t.Fatal(err)
			}
			if o.RunId != id || o.FirstRunId != id || o.ExistedBefore != existed || o.SizeBytes != fi.Size() || o.DeletedAt != nil {
				t.Errorf("%s: %+v (size on disk %d)", path, o, fi.Size())
			}
		}
		if len(got) != 3 {
			t.Errorf("the ledger lists %d files for the run, want 3: %+v", len(got), got)
		}
		prefix := filepath.Join(root, "new") + string(filepath.Separator)
		byPrefix := list(viewer, &client.ListLocalOutputsParams{PathPrefix: &prefix}).Outputs
		if len(byPrefix) != 2 {
			t.Errorf("path prefix %s: %+v", prefix, byPrefix)
		}
		one := int64(1)
		first := list(viewer, &client.ListLocalOutputsParams{Limit: &one})
		if len(first.Outputs) != 1 || first.NextCursor == nil {
			t.Fatalf("a page of one: %+v", first)
		}

		// A second run appending to the csv moves its entry on.
		id2 := s.submit(client.SubmitRequest{Config: "version: 1\npipeline:\n  source: {type: generate, config: {count: 2}}\n  sink: {type: csv, config: {path: new/out.csv, write_mode: append}}\n"}).RunId
		s.await(id2, client.RunStatusCompleted)
		csvEntry := got[filepath.Join(root, "new/out.csv")]
		r, err := viewer.GetLocalOutputWithResponse(ctx, csvEntry.Id)
		if err != nil || r.JSON200 == nil || r.JSON200.RunId != id2 || r.JSON200.FirstRunId != id || r.JSON200.ExistedBefore {
			t.Fatalf("the appended csv's entry: %v %s", err, r.Body)
		}
		if !slices.ContainsFunc(list(viewer, &client.ListLocalOutputsParams{RunId: &id}).Outputs, func(o client.LocalOutput) bool { return o.Id == csvEntry.Id }) {
			t.Error("the run that wrote the csv first no longer lists it")
		}

		// Deleting is for admins, and audited.
		for _, c := range []*client.ClientWithResponses{viewer, operator} {
			r, err := c.DeleteLocalOutputWithResponse(ctx, csvEntry.Id)
			if err != nil || r.StatusCode() != http.StatusForbidden {
				t.Fatalf("a non-admin deleting: %v %d %s", err, r.StatusCode(), r.Body)
			}
		}
		del, err := admin.DeleteLocalOutputWithResponse(ctx, csvEntry.Id)
		if err != nil || del.JSON200 == nil || del.JSON200.DeletedAt == nil {
			t.Fatalf("delete: %v %d %s", err, del.StatusCode(), del.Body)
		}
		if _, err := os.Stat(filepath.Join(root, "new/out.csv")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the deleted file is still there: %v", err)
		}
		if _, err := os.Stat(filepath.Join(root, "new/out.db")); err != nil {
			t.Fatalf("deleting one file took another: %v", err)
		}
		if r, _ := admin.DeleteLocalOutputWithResponse(ctx, csvEntry.Id); r.StatusCode() != http.StatusConflict {
			t.Fatalf("deleting twice: %d %s", r.StatusCode(), r.Body)
		}
		if r, _ := admin.GetLocalOutputWithResponse(ctx, csvEntry.Id); r.JSON200 == nil || r.JSON200.DeletedAt == nil {
			t.Fatalf("the deleted entry: %s", r.Body)
		}
		if r, _ := admin.DeleteLocalOutputWithResponse(ctx, "no-such-entry"); r.StatusCode() != http.StatusNotFound {
			t.Fatalf("deleting a missing entry: %d", r.StatusCode())
		}
		// A file replaced since faucet wrote it is not faucet's to delete,
		// even of the same size, where the file system may well give it the
		// inode number the removed one had.
		replaced := got[filepath.Join(root, "existing.jsonl")]
		if err := os.Remove(filepath.Join(root, "existing.jsonl")); err != nil {
			t.Fatal(err)
		}
		theirs := strings.Repeat("x", int(replaced.SizeBytes))
		if err := os.WriteFile(filepath.Join(root, "existing.jsonl"), []byte(theirs), 0o644); err != nil {
			t.Fatal(err)
		}
		if r, _ := admin.DeleteLocalOutputWithResponse(ctx, replaced.Id); r.StatusCode() != http.StatusConflict {
			t.Fatalf("deleting a replaced file: %d %s", r.StatusCode(), r.Body)
		}
		if b, _ := os.ReadFile(filepath.Join(root, "existing.jsonl")); string(b) != theirs {
			t.Fatal("the replaced file was deleted")
		}
		audit, err := admin.ListAuditWithResponse(ctx, &client.ListAuditParams{Action: ptr("local_output.delete")})
		if err != nil || audit.JSON200 == nil || len(audit.JSON200.Entries) < 3 {
			t.Fatalf("audit of deletions: %v %s", err, audit.Body)
		}

		// Deleting the run leaves its files and their entries.
		if r, err := admin.DeleteRunWithResponse(ctx, id); err != nil || r.StatusCode() != http.StatusNoContent {
			t.Fatalf("delete run: %v %d", err, r.StatusCode())
		}
		if _, err := os.Stat(filepath.Join(root, "new/out.db")); err != nil {
			t.Fatalf("deleting the run deleted its file: %v", err)
		}
		if n := len(list(viewer, &client.ListLocalOutputsParams{RunId: &id}).Outputs); n != 3 {
			t.Fatalf("after deleting the run the ledger lists %d of its files, want 3", n)
		}
	})
}
