package callbacks_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
	_ "github.com/faucet-dev/faucet/db/sqlite"
	"github.com/faucet-dev/faucet/internal/testwait"
	"github.com/faucet-dev/faucet/server/callbacks"
	"github.com/faucet-dev/faucet/server/metrics"
)

// receiver is a real HTTP server on loopback that answers each request with
// the next status of its script (the last one repeating) and keeps what it
// received.
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	script []int
	got    []received
	// hold, when set, blocks every request until it is closed.
	hold chan struct{}
}

type received struct {
	header http.Header
	body   []byte
}

func newReceiver(t *testing.T, script ...int) *receiver {
	t.Helper()
	r := &receiver{script: script}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, received{header: req.Header.Clone(), body: b})
		code := r.script[min(len(r.got)-1, len(r.script)-1)]
		hold := r.hold
		r.mu.Unlock()
		if hold != nil {
			select {
			case <-hold:
			case <-req.Context().Done():
				return
			}
		}
		if code >= 300 && code < 400 {
			w.Header().Set("Location", "http://169.254.169.254/")
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

func openStore(t *testing.T, path, instance string) db.Store {
	t.Helper()
	s, err := db.Open(t.Context(), "sqlite:"+path, db.Options{InstanceID: instance})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// finished writes a terminal run whose callback calls url.
func finished(t *testing.T, s db.Store, runID string, status db.RunStatus, spec callbacks.Spec) {
	t.Helper()
	cb, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	name := "orders"
	rec := &db.RunRecord{
		RunID: runID, Name: &name, Status: status, SubmittedAt: now.Add(-time.Second), StartedAt: &now, FinishedAt: &now,
		Labels: map[string]string{"team": "data"}, Invocations: []db.InvocationRecord{}, RecordsWritten: 7, Callback: cb,
	}
	if _, err := s.RunFinish(t.Context(), db.RunFinal{Record: rec}); err != nil {
		t.Fatal(err)
	}
}

func start(t *testing.T, cfg callbacks.Config, s db.Store) *callbacks.Dispatcher {
	t.Helper()
	if cfg.BackoffBase == 0 {
		cfg.BackoffBase, cfg.BackoffMax = time.Millisecond, 5*time.Millisecond
	}
	if cfg.Poll == 0 {
		cfg.Poll = 10 * time.Millisecond
	}
	d := callbacks.New(cfg, s)
	if err := d.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Stop)
	return d
}

// settled waits for runID's delivery to end and returns it.
func settled(t *testing.T, s db.Store, runID string) db.CallbackDelivery {
	t.Helper()
	var d db.CallbackDelivery
	testwait.Until(t, 10*time.Second, func() error {
		ds, err := s.CallbackList(context.Background(), runID)
		if err != nil || len(ds) != 1 {
			return fmt.Errorf("deliveries of %s: %v, %v", runID, ds, err)
		}
		if d = ds[0]; d.State == db.CallbackPending {
			return fmt.Errorf("delivery of %s still pending after %d attempts (%v)", runID, d.Attempts, d.LastError)
		}
		return nil
	})
	return d
}

var loopback = callbacks.Policy{AllowHosts: []string{"127.0.0.1"}}

func TestDeliversSignedAtLeastOnce(t *testing.T) {
	t.Parallel()
	s := openStore(t, filepath.Join(t.TempDir(), "h.db"), "a")
	rcv := newReceiver(t, 503, 200)
	m := metrics.New()
	secret := []byte("shh")
	start(t, callbacks.Config{
		Policy: loopback, Secret: secret, Metrics: m, Version: "test",
		Env: func(k string) (string, bool) {
			return map[string]string{"HOOK_TOKEN": "Bearer tok"}[k], k == "HOOK_TOKEN"
		},
	}, s)
	finished(t, s, "r1", db.StatusCompleted, callbacks.Spec{
		URL: rcv.URL + "/hook?key=abc", Method: "POST",
		Headers:     map[string]string{"Authorization": "${env:HOOK_TOKEN}", "X-Team": "data"},
		ExtraFields: map[string]any{"job_id": "j-9"},
	})

	d := settled(t, s, "r1")
	if d.State != db.CallbackDelivered || d.Attempts != 2 || d.LastStatusCode == nil || *d.LastStatusCode != 200 || d.LastError != nil {
		t.Fatalf("delivery %+v, want delivered on the second attempt", d)
	}
	reqs := rcv.requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	for i, r := range reqs {
		if r.header.Get("Faucet-Delivery-Id") != d.DeliveryID || r.header.Get("Faucet-Delivery-Attempt") != fmt.Sprint(i+1) {
			t.Errorf("request %d: delivery id %q attempt %q", i, r.header.Get("Faucet-Delivery-Id"), r.header.Get("Faucet-Delivery-Attempt"))
		}
		if got, want := r.header.Get(callbacks.SignatureHeader), callbacks.Sign(secret, r.body); got != want {
			t.Errorf("request %d: signature %q, want %q", i, got, want)
		}
		if r.header.Get("Authorization") != "Bearer tok" || r.header.Get("X-Team") != "data" || r.header.Get("Content-Type") != "application/json" ||
			r.header.Get("Faucet-Event") != "run.completed" || r.header.Get("User-Agent") != "faucet/test" {
			t.Errorf("request %d: headers %v", i, r.header)
		}
	}
	if string(reqs[0].body) != string(reqs[1].body) {
		t.Error("a retry sent other bytes")
	}
	var body map[string]any
	if err := json.Unmarshal(reqs[1].body, &body); err != nil {
		t.Fatal(err)
	}
	if body["delivery_id"] != d.DeliveryID || body["run_id"] != "r1" || body["status"] != "completed" || body["job_id"] != "j-9" || body["records_written"] != 7.0 {
		t.Errorf("body %v", body)
	}
	testwait.Until(t, 5*time.Second, func() error {
		if got := counter(t, m, "faucet_callback_deliveries_total", `result="delivered"`); got != 1 {
			return fmt.Errorf("delivered counter %v", got)
		}
		if got := counter(t, m, "faucet_callback_deliveries_total", `result="retried"`); got != 1 {
			return fmt.Errorf("retried counter %v", got)
		}
		return nil
	})
}

func TestGivesUp(t *testing.T) {
	t.Parallel()
	s := openStore(t, filepath.Join(t.TempDir(), "h.db"), "a")
	refusing := newReceiver(t, 400)
	failing := newReceiver(t, 500)
	moving := newReceiver(t, 302)
	start(t, callbacks.Config{Policy: callbacks.Policy{AllowHosts: []string{"127.0.0.1", "hooks.test"}}, MaxAttempts: 3}, s)
	finished(t, s, "refused", db.StatusFailed, callbacks.Spec{URL: refusing.URL, Method: "POST"})
	finished(t, s, "failing", db.StatusFailed, callbacks.Spec{URL: failing.URL, Method: "PUT"})
	finished(t, s, "moved", db.StatusCancelled, callbacks.Spec{URL: moving.URL, Method: "POST"})
	finished(t, s, "unset", db.StatusCompleted, callbacks.Spec{URL: failing.URL, Method: "POST", Headers: map[string]string{"Authorization": "${env:FAUCET_TEST_UNSET_VAR}"}})

	for runID, want := range map[string]struct {
		attempts int
		msg      string
	}{
		"refused": {1, "HTTP 400"},
		"failing": {3, "gave up after 3 attempts; the last: HTTP 500"},
		"moved":   {1, "HTTP 302: redirects are not followed"},
		"unset":   {1, "environment variable FAUCET_TEST_UNSET_VAR is not set"},
	} {
		d := settled(t, s, runID)
		if d.State != db.CallbackFailed || d.Attempts != want.attempts || d.LastError == nil || !strings.Contains(*d.LastError, want.msg) {
			t.Errorf("%s: %+v (%v), want failed after %d attempt(s) with %q", runID, d, deref(d.LastError), want.attempts, want.msg)
		}
	}
	if n := len(failing.requests()); n != 3 {
		t.Errorf("the failing target heard %d attempts, want 3", n)
	}
}

// fakeDNS answers every name with one address: a name that resolves inside,
// as a rebinding DNS server makes one do after the submit was checked.
type fakeDNS netip.Addr

func (f fakeDNS) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.Addr(f)}, nil
}

func TestRefusesAnAddressResolvedInside(t *testing.T) {
	t.Parallel()
	s := openStore(t, filepath.Join(t.TempDir(), "h.db"), "a")
	rcv := newReceiver(t, 200)
	port := rcv.URL[strings.LastIndex(rcv.URL, ":")+1:]
	dns := fakeDNS(netip.MustParseAddr("127.0.0.1"))
	// Without an allow-list, the name passes the submit's check and is
	// refused once it resolves to loopback.
	start(t, callbacks.Config{Resolver: dns}, s)
	spec, err := callbacks.Policy{}.Check(callbacks.Spec{URL: "http://hooks.test:" + port + "/cb"})
	if err != nil {
		t.Fatal(err)
	}
	finished(t, s, "rebound", db.StatusCompleted, spec)
	d := settled(t, s, "rebound")
	if d.State != db.CallbackFailed || d.LastError == nil || !strings.Contains(*d.LastError, "hooks.test resolves to 127.0.0.1, a loopback address") {
		t.Fatalf("delivery %+v (%v), want it refused", d, deref(d.LastError))
	}
	if n := len(rcv.requests()); n != 0 {
		t.Fatalf("the target heard %d requests", n)
	}

	// Allow-listed by name, the same target is trusted.
	s2 := openStore(t, filepath.Join(t.TempDir(), "h.db"), "b")
	start(t, callbacks.Config{Resolver: dns, Policy: callbacks.Policy{AllowHosts: []string{"hooks.test"}}}, s2)
	finished(t, s2, "allowed", db.StatusCompleted, spec)
	if d := settled(t, s2, "allowed"); d.State != db.CallbackDelivered {
		t.Fatalf("allow-listed delivery %+v (%v)", d, deref(d.LastError))
	}
}

// A dispatcher stopped mid-attempt gives the delivery back due at once; the
// next one (another process on the same history) delivers it, under the
// same delivery id.
func TestStopHandsTheAttemptOver(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "h.db")
	s := openStore(t, path, "first")
	rcv := newReceiver(t, 200)
	hold := make(chan struct{})
	rcv.mu.Lock()
	rcv.hold = hold
	rcv.mu.Unlock()
	d := start(t, callbacks.Config{Policy: loopback, BackoffBase: time.Hour, BackoffMax: time.Hour}, s)
	finished(t, s, "r1", db.StatusCompleted, callbacks.Spec{URL: rcv.URL, Method: "POST"})
	testwait.Until(t, 10*time.Second, func() error {
		if n := len(rcv.requests()); n != 1 {
			return fmt.Errorf("%d requests in flight, want 1", n)
		}
		return nil
	})
	d.Stop()
	ds, err := s.CallbackList(t.Context(), "r1")
	if err != nil || len(ds) != 1 || ds[0].State != db.CallbackPending || ds[0].Attempts != 1 || ds[0].NextAttemptAt.After(time.Now()) {
		t.Fatalf("after the stop: %+v, %v; want pending, due now", ds, err)
	}
	close(hold)
	next := openStore(t, path, "next")
	start(t, callbacks.Config{Policy: loopback}, next)
	got := settled(t, next, "r1")
	if got.State != db.CallbackDelivered || got.Attempts != 2 {
		t.Fatalf("delivery %+v, want delivered on the second attempt", got)
	}
	reqs := rcv.requests()
	if len(reqs) != 2 || reqs[0].header.Get("Faucet-Delivery-Id") != reqs[1].header.Get("Faucet-Delivery-Id") {
		t.Fatalf("requests %d, ids %q %q", len(reqs), reqs[0].header.Get("Faucet-Delivery-Id"), reqs[len(reqs)-1].header.Get("Faucet-Delivery-Id"))
	}
}

// Two dispatchers on one history deliver each callback once.
func TestDispatchersShareTheOutbox(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "h.db")
	a, b := openStore(t, path, "a"), openStore(t, path, "b")
	rcv := newReceiver(t, 200)
	start(t, callbacks.Config{Policy: loopback, MaxConcurrent: 3}, a)
	start(t, callbacks.Config{Policy: loopback, MaxConcurrent: 3}, b)
	const n = 30
	for i := range n {
		finished(t, a, fmt.Sprintf("r%02d", i), db.StatusCompleted, callbacks.Spec{URL: rcv.URL, Method: "POST"})
	}
	for i := range n {
		if d := settled(t, a, fmt.Sprintf("r%02d", i)); d.State != db.CallbackDelivered || d.Attempts != 1 {
			t.Fatalf("delivery %+v", d)
		}
	}
	seen := map[string]int{}
	for _, r := range rcv.requests() {
		seen[r.header.Get("Faucet-Delivery-Id")]++
	}
	if len(seen) != n {
		t.Fatalf("%d distinct deliveries heard, want %d", len(seen), n)
	}
	for id, c := range seen {
		if c != 1 {
			t.Errorf("delivery %s heard %d times", id, c)
		}
	}
}

func counter(t *testing.T, m *metrics.Metrics, name, labels string) float64 {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if strings.HasPrefix(line, name+"{"+labels+"}") {
			var v float64
			fmt.Sscan(strings.TrimSpace(line[strings.LastIndex(line, " "):]), &v)
			return v
		}
	}
	return 0
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
