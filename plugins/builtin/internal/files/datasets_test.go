package files

import (
	"context"
	"testing"

	"github.com/faucet-dev/faucet/plugins/sdk"
)

// TestDatasetsNameTheFileOfEachSessionsRoots: the URI of a relative path
// is beneath the first root of the session's own file access, though the
// path was decoded once for all sessions of the config; a config that does
// not decode fails each time.
func TestDatasetsNameTheFileOfEachSessionsRoots(t *testing.T) {
	config := []byte(`{"path":"out/data.jsonl","write_mode":"overwrite"}`)
	for _, root := range []string{"/srv/a", "/srv/b", "/srv/a"} {
		ctx := sdk.WithFiles(context.Background(), sdk.NewFiles([]string{root}, nil))
		got, err := Datasets(ctx, sdk.DatasetsRequest{Role: sdk.RoleSink, Config: config})
		if want := "file://" + root + "/out/data.jsonl"; err != nil || len(got) != 1 || got[0].URI != want {
			t.Fatalf("under %s: %+v, %v; want %s", root, got, err, want)
		}
	}
	for range 2 {
		if _, err := Datasets(context.Background(), sdk.DatasetsRequest{Config: []byte(`{"path":`)}); err == nil {
			t.Fatal("a config that does not decode was described")
		}
	}
}
