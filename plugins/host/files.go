package host

import (
	"github.com/faucet-dev/faucet/plugins/internal/protocol"
	connectorv1 "github.com/faucet-dev/faucet/plugins/proto/faucet/connector/v1"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// fileAccess is what a call to p carries of Options.Files: nil when the
// host confines nothing, or when p speaks a protocol before 1.3 and would
// not understand it (it is then warned about once per connector: such a
// plugin opens whatever paths its config names).
func (h *Host) fileAccess(c *Connector, p *proc) *connectorv1.FileAccess {
	if h.opts.Files == nil {
		return nil
	}
	f := h.opts.Files()
	if f == nil || !f.Confined() {
		return nil
	}
	if !protocol.Supports(p.version, protocol.VersionFileAccess) {
		if _, warned := h.unconfined.LoadOrStore(c.Name, true); !warned {
			h.log.Warn("the connector speaks a connector protocol before 1.3 and is not told the file roots: "+
				"the paths it opens are not confined", "connector", c.Name, "path", c.Path, "protocol", p.version)
		}
		return nil
	}
	if last := h.access.Load(); last != nil && last.files == f {
		return last.msg
	}
	fa := &connectorv1.FileAccess{Roots: f.Roots()}
	for _, d := range f.Denied() {
		fa.Denied = append(fa.Denied, &connectorv1.DeniedFile{Path: d.Path, Device: d.Device, Inode: d.Inode, Directory: d.Dir})
	}
	h.access.Store(&accessMsg{files: f, msg: fa})
	return fa
}

// accessMsg is the message of one file access, built once for every call
// that carries it: Options.Files returns the same *sdk.Files until what it
// grants changes, and a message only read (marshalled) is safe to share
// between calls.
type accessMsg struct {
	files *sdk.Files
	msg   *connectorv1.FileAccess
}
