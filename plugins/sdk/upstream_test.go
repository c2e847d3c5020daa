package sdk

import (
	"context"
	"encoding/json"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/connectivity"

	"github.com/faucet-dev/faucet/plugins/internal/protocol"
	connectorv1 "github.com/faucet-dev/faucet/plugins/proto/faucet/connector/v1"
)

// counter is a source of n records {"i": 1} … {"i": n}.
type counter struct{}

func (counter) Spec() Spec {
	return Spec{Name: "counter", SourceSchema: json.RawMessage(`{"type":"object"}`)}
}

func (counter) Read(_ context.Context, req ReadRequest, w *BatchWriter) error {
	var cfg struct{ N int }
	if err := json.Unmarshal(req.Config, &cfg); err != nil {
		return err
	}
	for i := 1; i <= cfg.N; i++ {
		if err := w.AppendRaw([]byte(`{"i":` + strconv.Itoa(i) + `}`)); err != nil {
			return err
		}
	}
	return nil
}

// serveSource serves the counter source on a new unix socket, as a source
// plugin does, and returns its address and server.
func serveSource(t *testing.T) (string, *grpc.Server) {
	t.Helper()
	return serveSourceAt(t, filepath.Join(t.TempDir(), "source.sock"))
}

// readAll reads n records from the source at addr through the pool, the way
// a sink's write session does, and hands the connection back.
func readAll(t *testing.T, p *upstreamPool, addr string, n int) *grpc.ClientConn {
	t.Helper()
	conn, release, err := p.get("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rs, err := connectorv1.NewConnectorServiceClient(conn).Read(ctx, &connectorv1.ReadRequest{Config: json.RawMessage(`{"N": ` + strconv.Itoa(n) + `}`)})
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for {
		msg, err := rs.Recv()
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		if st := msg.GetStats(); st != nil {
			if got != n || st.GetRecords() != int64(n) {
				t.Fatalf("read %d records, stats say %d; want %d", got, st.GetRecords(), n)
			}
			return conn
		}
		got += int(msg.GetBatch().GetCount())
	}
}

func TestUpstreamConnectionIsReusedWhileUp(t *testing.T) {
	p := newUpstreamPool()
	addr, srv := serveSource(t)
	first := readAll(t, p, addr, 10)
	if again := readAll(t, p, addr, 20); again != first {
		t.Fatal("a second session to the same source dialed a new connection")
	}

	// The source goes away and another one listens at the same address: the
	// broken connection must not be reused.
	srv.Stop()
	waitState(t, first, func(s connectivity.State) bool { return s != connectivity.Ready })
	addr2, _ := serveSourceAt(t, addr)
	if after := readAll(t, p, addr2, 5); after == first {
		t.Fatal("the connection to a source that went away was reused")
	}
	if s := first.GetState(); s != connectivity.Shutdown {
		t.Errorf("the broken connection is %v, want it closed", s)
	}
}

func TestIdleUpstreamsAreBounded(t *testing.T) {
	p := newUpstreamPool()
	var conns []*grpc.ClientConn
	for range maxIdleUpstreams + 2 {
		addr, _ := serveSource(t)
		conns = append(conns, readAll(t, p, addr, 1))
	}
	if len(p.conns) != maxIdleUpstreams {
		t.Errorf("%d idle connections kept, want %d", len(p.conns), maxIdleUpstreams)
	}
	// The least recently used ones were closed.
	for i, c := range conns {
		closed := c.GetState() == connectivity.Shutdown
		if closed != (i < 2) {
			t.Errorf("connection %d: closed = %v", i, closed)
		}
	}

	// A connection unused for upstreamIdleTimeout is closed by the next get.
	p.mu.Lock()
	for _, u := range p.conns {
		u.used = u.used.Add(-2 * upstreamIdleTimeout)
	}
	p.mu.Unlock()
	addr, _ := serveSource(t)
	readAll(t, p, addr, 1)
	if len(p.conns) != 1 {
		t.Errorf("%d connections kept after the others expired, want 1", len(p.conns))
	}
	for i, c := range conns {
		if s := c.GetState(); s != connectivity.Shutdown {
			t.Errorf("expired connection %d is %v, want it closed", i, s)
		}
	}
}

// serveSourceAt serves the counter source on the unix socket at addr.
func serveSourceAt(t *testing.T, addr string) (string, *grpc.Server) {
	t.Helper()
	ln, err := net.Listen("unix", addr)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(protocol.ServerOptions()...)
	connectorv1.RegisterConnectorServiceServer(s, newServer(counter{}))
	go s.Serve(ln)
	t.Cleanup(s.Stop)
	return addr, s
}

func waitState(t *testing.T, c *grpc.ClientConn, ok func(connectivity.State) bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for s := c.GetState(); !ok(s); s = c.GetState() {
		if !c.WaitForStateChange(ctx, s) {
			t.Fatalf("connection stayed %v", s)
		}
	}
}
