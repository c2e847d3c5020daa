package sdk

import (
	"testing"

	connectorv1 "github.com/faucet-dev/faucet/plugins/proto/faucet/connector/v1"
)

// TestAccessCache: a call sent the file access of the call before gets the
// same Files (what it learnt is kept); any difference decodes a new one.
func TestAccessCache(t *testing.T) {
	c := &accessCache{}
	access := func(root string, inode uint64) *connectorv1.FileAccess {
		return &connectorv1.FileAccess{Roots: []string{root}, Denied: []*connectorv1.DeniedFile{{Path: root + "/history.db", Device: 1, Inode: inode}}}
	}
	files := func(fa *connectorv1.FileAccess) *Files { return FilesFrom(c.callContext(t.Context(), fa)) }
	first := files(access("/srv", 7))
	if again := files(access("/srv", 7)); again != first {
		t.Fatal("the same file access decoded again")
	}
	for what, fa := range map[string]*connectorv1.FileAccess{
		"another root":          access("/data", 7),
		"another identity":      access("/srv", 8),
		"another denied file":   {Roots: []string{"/srv"}, Denied: []*connectorv1.DeniedFile{{Path: "/srv/x", Device: 1, Inode: 7}}},
		"one denied file fewer": {Roots: []string{"/srv"}},
	} {
		if got := files(fa); got == first || !got.sameAccess(fa) {
			t.Errorf("%s: kept the earlier file access", what)
		}
		files(access("/srv", 7))
	}
	if files(nil).Confined() {
		t.Fatal("a call without file access is confined")
	}
}
