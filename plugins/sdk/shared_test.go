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

// ignoresRegion is a source plugin that ignores the sink's region, as a
// source may.
type ignoresRegion struct {
	connectorv1.ConnectorServiceServer
}

func (s ignoresRegion) Read(req *connectorv1.ReadRequest, stream grpc.ServerStreamingServer[connectorv1.ReadResponse]) error {
	req.SharedRegion = nil
	return s.ConnectorServiceServer.Read(req, stream)
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
// write session does, checking each record, and returns how many batches
// came through a shared region's slots.
func readUpstream(t *testing.T, srv connectorv1.ConnectorServiceServer, version uint32, n int, pad func(int) int, regions *regionCache) int {
	t.Helper()
	shared, _ := keepUpstream(t, srv, version, n, pad, regions, sharedSlots, 0)
	return shared
}

// keepUpstream is readUpstream through a region of the given slots, by a
// writer that keeps every batch (Batch.Keep) and releases what it keeps
// every window batches (never, for window -1; it keeps none for 0). Each
// kept batch must read as it came until released. It returns how many
// batches came through slots and how many keeps were lent their memory.
func keepUpstream(t *testing.T, srv connectorv1.ConnectorServiceServer, version uint32, n int, pad func(int) int, regions *regionCache, slots, window int) (shared, lent int) {
	t.Helper()
	conn := serve(t, srv)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	up := &connectorv1.Upstream{Read: &connectorv1.ReadRequest{Config: json.RawMessage(`{"N": ` + strconv.Itoa(n) + `}`)}, ProtocolVersion: version}
	u, msg, err := openUpstream(ctx, conn, up, regions, slots)
	if err != nil {
		t.Fatal(err)
	}
	defer u.close()
	next := 1
	type keep struct {
		k    *Kept
		want []byte
	}
	var kept []keep
	check := func() {
		for i, k := range kept {
			if !bytes.Equal(k.k.Records(), k.want) {
				t.Fatalf("kept batch %d of %d changed before its release", i+1, len(kept))
			}
		}
	}
	release := func() {
		check()
		for _, k := range kept {
			k.k.Release()
		}
		kept = kept[:0]
	}
	defer release()
	for msg.stats == nil {
		if msg.batch.GetShared() != nil {
			shared++
		}
		data, err := u.records(msg.batch)
		if err != nil {
			t.Fatal(err)
		}
		loan := u.loan(msg.batch, data)
		b := Batch{Count: int(msg.batch.GetCount()), Records: data, lender: loan}
		for rec := range b.All() {
			want := `{"i":` + strconv.Itoa(next) + `,"pad":"` + strings.Repeat("x", pad(next)) + `"}`
			if string(rec) != want {
				t.Fatalf("record %d: got %.60s…, want %.60s…", next, rec, want)
			}
			next++
		}
		if window != 0 {
			k := b.Keep()
			if len(data) > 0 && &k.Records()[0] == &data[0] {
				lent++
			}
			kept = append(kept, keep{k, bytes.Clone(data)})
		}
		loan.done()
		if window > 0 && len(kept) == window {
			release()
		}
		u.reclaim()
		// However many batches the writer releases at once, the source
		// may fill no more than sharedSlots ahead of the sink.
		if ahead := slots - len(u.held); u.region != nil && int(u.consumed) >= slots-sharedSlots && ahead > sharedSlots {
			t.Fatalf("after %d batches through slots the source may fill %d ahead, more than %d", u.consumed, ahead, sharedSlots)
		}
		if msg, err = u.recv(); err != nil {
			t.Fatal(err)
		}
	}
	if next-1 != n || msg.stats.GetRecords() != int64(n) {
		t.Fatalf("read %d records, stats say %d, want %d", next-1, msg.stats.GetRecords(), n)
	}
	return shared, lent
}

// TestSharedReads reads sources through shared regions: many more batches
// than slots, records that outgrow a slot (they travel in the message), a
// read too small to map the region for, and plain messages for a source
// that speaks protocol 1.0 and for one that ignores the region.
func TestSharedReads(t *testing.T) {
	small := func(int) int { return 100 }
	// Every 200th record is big enough that its batch outgrows a slot.
	mixed := func(i int) int {
		if i%200 == 0 {
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
		// shared is whether batches come through slots.
		shared bool
	}{
		{"shared", newServer(padded{small}), protocol.VersionSharedReads, 100_000, small, true},
		{"shared, oversized batches", newServer(padded{mixed}), protocol.VersionSharedReads, 800, mixed, true},
		{"too small to share", newServer(padded{small}), protocol.VersionSharedReads, 100, small, false},
		{"source speaks 1.0", newServer(padded{small}), protocol.Version1, 20_000, small, false},
		{"source ignores the region", ignoresRegion{newServer(padded{small})}, protocol.VersionSharedReads, 20_000, small, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if shared := readUpstream(t, tc.srv, tc.version, tc.n, tc.pad, &regionCache{}); (shared > 0) != tc.shared {
				t.Errorf("%d batches came through slots; want some: %v", shared, tc.shared)
			}
		})
	}
}

// TestRegionKeptOnlyWhileUnused: a sink keeps its region from a read that
// did not use it for the next, and lets a used one go with its memory.
func TestRegionKeptOnlyWhileUnused(t *testing.T) {
	small := func(int) int { return 100 }
	srv := newServer(padded{small})
	regions := &regionCache{}
	readUpstream(t, srv, protocol.VersionSharedReads, 100, small, regions)
	kept := regions.idle
	if kept == nil {
		t.Fatal("the region of a small read was not kept")
	}
	readUpstream(t, srv, protocol.VersionSharedReads, 100, small, regions)
	if regions.idle != kept {
		t.Fatal("the next small read did not reuse the kept region")
	}
	if shared := readUpstream(t, srv, protocol.VersionSharedReads, 50_000, small, regions); shared == 0 || regions.idle != nil {
		t.Fatalf("a read that used the region (%d batches through slots) left it kept", shared)
	}
}

// TestKeptBatches: a writer keeps batches of a shared read. Through a
// region with room for kept batches, a writer releasing them every few
// batches is lent their slots, and one keeping more than the region holds
// (or never releasing) still reads the whole source, its oldest batches
// moved out of their slots; through a region without such room every
// keep is a copy. Every kept batch reads as it came until released.
func TestKeptBatches(t *testing.T) {
	// About 50 records a batch: some 60 batches, three regions' worth.
	big := func(int) int { return 20_000 }
	srv := newServer(padded{big})
	const n = 3_000
	for _, tc := range []struct {
		name          string
		slots, window int
		// lent says whether all, some or none of the keeps are lent.
		lent string
	}{
		{"released in time", sharedSlots + sharedKeptSlots, 8, "all"},
		{"kept longer than the region holds", sharedSlots + sharedKeptSlots, 3 * sharedKeptSlots, "some"},
		{"never released", sharedSlots + sharedKeptSlots, -1, "some"},
		{"no room for kept batches", sharedSlots, 8, "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			shared, lent := keepUpstream(t, srv, protocol.VersionSharedReads, n, big, &regionCache{}, tc.slots, tc.window)
			got := map[bool]string{true: "some", false: "none"}[lent > 0]
			if lent == shared && shared > 0 {
				got = "all"
			}
			if got != tc.lent || shared < 2*(sharedSlots+sharedKeptSlots) {
				t.Errorf("%d of %d batches through slots lent, want %s", lent, shared, tc.lent)
			}
		})
	}
}
