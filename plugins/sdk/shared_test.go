package sdk

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/faucet-dev/faucet/plugins/internal/protocol"
	connectorv1 "github.com/faucet-dev/faucet/plugins/proto/faucet/connector/v1"
)

// padded is a source of n records {"i":…,"pad":"xx…"}, the pad of the
// i-th record pad(i) bytes long.
type padded struct{ pad func(i int) int }

func (padded) Spec() Spec {
	return Spec{Name: "padded", SourceSchema: json.RawMessage(`{"type":"object"}`)}
}

func (p padded) Read(_ context.Context, req ReadRequest, w *BatchWriter) error {
	var cfg struct{ N int }
	if err := json.Unmarshal(req.Config, &cfg); err != nil {
		return err
	}
	for i := 1; i <= cfg.N; i++ {
		err := w.AppendFunc(func(dst []byte) ([]byte, error) {
			dst = append(dst, `{"i":`...)
			dst = strconv.AppendInt(dst, int64(i), 10)
			dst = append(dst, `,"pad":"`...)
			dst = append(dst, bytes.Repeat([]byte{'x'}, p.pad(i))...)
			return append(dst, `"}`...), nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// noShared is a source plugin that cannot map a sink's region.
type noShared struct {
	connectorv1.ConnectorServiceServer
}

func (noShared) ReadShared(grpc.BidiStreamingServer[connectorv1.ReadSharedRequest, connectorv1.ReadSharedResponse]) error {
	return status.Error(codes.FailedPrecondition, "no /proc here")
}

// serve serves srv on a new unix socket and returns a connection to it.
func serve(t *testing.T, srv connectorv1.ConnectorServiceServer) *grpc.ClientConn {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(t.TempDir(), "source.sock"))
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(protocol.ServerOptions()...)
	connectorv1.RegisterConnectorServiceServer(s, srv)
	go s.Serve(ln)
	t.Cleanup(s.Stop)
	p := newUpstreamPool()
	conn, release, err := p.get("unix", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		release()
		conn.Close()
	})
	return conn
}

// readUpstream reads n records of src through openUpstream the way a sink's
// write session does, checking each record, and reports whether the read
// went through a shared region.
func readUpstream(t *testing.T, srv connectorv1.ConnectorServiceServer, version uint32, n int, pad func(int) int) bool {
	t.Helper()
	conn := serve(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	up := &connectorv1.Upstream{Read: &connectorv1.ReadRequest{Config: json.RawMessage(`{"N": ` + strconv.Itoa(n) + `}`)}, ProtocolVersion: version}
	u, msg, err := openUpstream(ctx, conn, up)
	if err != nil {
		t.Fatal(err)
	}
	defer u.close()
	next := 1
	for msg.stats == nil {
		data, err := u.records(msg.batch)
		if err != nil {
			t.Fatal(err)
		}
		b := Batch{Count: int(msg.batch.GetCount()), Records: data}
		for rec := range b.All() {
			want := `{"i":` + strconv.Itoa(next) + `,"pad":"` + strings.Repeat("x", pad(next)) + `"}`
			if string(rec) != want {
				t.Fatalf("record %d: got %.60s…, want %.60s…", next, rec, want)
			}
			next++
		}
		u.done(msg.batch, data)
		if msg, err = u.recv(); err != nil {
			t.Fatal(err)
		}
	}
	if next-1 != n || msg.stats.GetRecords() != int64(n) {
		t.Fatalf("read %d records, stats say %d, want %d", next-1, msg.stats.GetRecords(), n)
	}
	return u.region != nil
}

// TestSharedReads reads sources through shared regions: many more batches
// than slots, records that outgrow a slot (they travel in the message),
// and the fallbacks to plain messages for a source that speaks protocol 1.0
// and for one that cannot map the region.
func TestSharedReads(t *testing.T) {
	small := func(int) int { return 100 }
	// Every 50th record is big enough that its batch outgrows a slot.
	mixed := func(i int) int {
		if i%50 == 0 {
			return sharedSlotBytes
		}
		return 20_000
	}
	for _, tc := range []struct {
		name    string
		srv     connectorv1.ConnectorServiceServer
		version uint32
		n       int
		pad     func(int) int
		shared  bool
	}{
		{"shared", newServer(padded{small}), protocol.VersionSharedReads, 100_000, small, true},
		{"shared, oversized batches", newServer(padded{mixed}), protocol.VersionSharedReads, 400, mixed, true},
		{"source speaks 1.0", newServer(padded{small}), protocol.Version1, 20_000, small, false},
		{"source cannot map the region", noShared{newServer(padded{small})}, protocol.VersionSharedReads, 20_000, small, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if shared := readUpstream(t, tc.srv, tc.version, tc.n, tc.pad); shared != tc.shared {
				t.Errorf("read through a shared region: %v, want %v", shared, tc.shared)
			}
		})
	}
}
