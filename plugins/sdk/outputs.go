package sdk

import (
	"context"
	"sync"

	connectorv1 "github.com/faucet-dev/faucet/plugins/proto/faucet/connector/v1"
)

// OutputFile is a file a sink session created or replaced on disk.
type OutputFile struct {
	// Path is the file's absolute path.
	Path string
	Size int64
	// Existed: a file was at Path before the session.
	Existed bool
}

// ReportOutput tells faucet that the write session ctx belongs to created
// or replaced a file. Call it from Close once the file is in place: faucet
// serve keeps a ledger of the files its runs wrote (GET /v1/local-outputs),
// which only knows what sinks report. A call outside a write session, or
// one faucet does not record (faucet run), does nothing.
func ReportOutput(ctx context.Context, f OutputFile) {
	if o, ok := ctx.Value(outputsKey{}).(*outputs); ok {
		o.add(f)
	}
}

type outputsKey struct{}

// outputs collects a session's reported files.
type outputs struct {
	mu    sync.Mutex
	files []*connectorv1.OutputFile
}

func withOutputs(ctx context.Context) (context.Context, *outputs) {
	o := &outputs{}
	return context.WithValue(ctx, outputsKey{}, o), o
}

func (o *outputs) add(f OutputFile) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, prev := range o.files {
		if prev.Path == f.Path {
			prev.Size = f.Size
			return
		}
	}
	o.files = append(o.files, &connectorv1.OutputFile{Path: f.Path, Size: f.Size, Existed: f.Existed})
}

func (o *outputs) list() []*connectorv1.OutputFile {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.files
}
