package host

import (
	"log/slog"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/faucet-dev/faucet/plugins/internal/protocol"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// TestFileAccessMessage: calls carry one message while Options.Files
// returns the same Files, and a new one, saying what the new Files grants,
// as soon as it returns another (the server's files taken again).
func TestFileAccessMessage(t *testing.T) {
	var current atomic.Pointer[sdk.Files]
	current.Store(sdk.NewFiles([]string{"/srv"}, []sdk.DeniedFile{{Path: "/srv/data/history.db"}}))
	h := &Host{opts: Options{Files: current.Load}, log: slog.New(slog.DiscardHandler)}
	c, p := &Connector{Spec: sdk.Spec{Name: "jsonl"}}, &proc{version: protocol.Latest}
	first := h.fileAccess(c, p)
	if h.fileAccess(c, p) != first {
		t.Fatal("the same file access built again")
	}
	current.Store(sdk.NewFiles([]string{"/srv"}, []sdk.DeniedFile{{Path: "/srv/data/history.db", Device: 1, Inode: 2}}))
	next := h.fileAccess(c, p)
	if next == first || len(next.GetDenied()) != 1 || next.GetDenied()[0].GetInode() != 2 || !slices.Equal(next.GetRoots(), []string{"/srv"}) {
		t.Fatalf("after the server's files changed, calls carry %v", next)
	}
	if old := (&proc{version: protocol.VersionDatasets}); h.fileAccess(c, old) != nil {
		t.Fatal("a plugin before protocol 1.3 was sent the file access")
	}
}
