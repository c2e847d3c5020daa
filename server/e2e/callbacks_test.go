package e2e

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/internal/testwait"
	"github.com/faucet-dev/faucet/openapi/client"
)

const callbackSecret = "e2e-callback-signing-key"

// receiver is a completion-callback target on loopback, at an address
// fixed before it listens, so a server can be given it while it is down.
type receiver struct {
	t    *testing.T
	addr string

	mu  sync.Mutex
	got []callbackRequest
	srv *http.Server
}

// callbackRequest is one request a receiver heard.
type callbackRequest struct {
	header http.Header
	path   string
	body   []byte
	doc    map[string]any
}

// newReceiver reserves a loopback port for a receiver that is not up yet.
func newReceiver(t *testing.T) *receiver {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return &receiver{t: t, addr: addr}
}

// url is the receiver's URL for path.
func (r *receiver) url(path string) string { return "http://" + r.addr + path }

// up starts answering 204 to every request.
func (r *receiver) up() {
	r.t.Helper()
	ln, err := net.Listen("tcp", r.addr)
	if err != nil {
		r.t.Fatalf("receiver: listen again on %s: %v", r.addr, err)
	}
	r.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		got := callbackRequest{header: req.Header.Clone(), path: req.URL.RequestURI(), body: b}
		if err := json.Unmarshal(b, &got.doc); err != nil {
			r.t.Errorf("callback body is not JSON: %v: %s", err, b)
		}
		r.mu.Lock()
		r.got = append(r.got, got)
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() {
		if err := r.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			r.t.Errorf("receiver: %v", err)
		}
	}()
	r.t.Cleanup(func() { _ = r.srv.Close() })
}

// of returns the requests heard for runID.
func (r *receiver) of(runID string) []callbackRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []callbackRequest
	for _, g := range r.got {
		if g.doc["run_id"] == runID {
			out = append(out, g)
		}
	}
	return out
}

// await waits for runID's callback and returns its first request.
func (r *receiver) await(s *server, runID string) callbackRequest {
	r.t.Helper()
	testwait.Until(r.t, 2*time.Minute, func() error {
		if len(r.of(runID)) == 0 {
			return fmt.Errorf("no callback for run %s yet: %+v\n%s", runID, s.get(runID).CallbackDeliveries, s.stderr.String())
		}
		return nil
	})
	return r.of(runID)[0]
}

// delivery returns runID's one outbox delivery, as GET /v1/runs/{id} shows it.
func delivery(t *testing.T, s *server, runID string) client.CallbackDelivery {
	t.Helper()
	rec := s.get(runID)
	if rec.CallbackDeliveries == nil || len(*rec.CallbackDeliveries) != 1 {
		t.Fatalf("run %s (%s): callback deliveries %+v, want one", runID, rec.Status, rec.CallbackDeliveries)
	}
	return (*rec.CallbackDeliveries)[0]
}

// awaitDelivery polls runID's delivery until ok accepts it.
func awaitDelivery(t *testing.T, s *server, runID string, ok func(client.CallbackDelivery) bool) client.CallbackDelivery {
	t.Helper()
	var d client.CallbackDelivery
	testwait.Until(t, 2*time.Minute, func() error {
		if d = delivery(t, s, runID); ok(d) {
			return nil
		}
		return fmt.Errorf("run %s: delivery %+v", runID, d)
	})
	return d
}

// failedAttempt accepts a delivery still pending after an attempt that
// failed: the receiver was down.
func failedAttempt(d client.CallbackDelivery) bool {
	return d.State == client.CallbackStatePending && d.Attempts >= 1 && d.LastError != nil
}

// checkSent asserts what one request carried: the delivery's id in the
// header and the body, its signature, the run's facts.
func checkSent(t *testing.T, got callbackRequest, d client.CallbackDelivery, runID string, status client.RunStatus) {
	t.Helper()
	mac := hmac.New(sha256.New, []byte(callbackSecret))
	mac.Write(got.body)
	if want := "sha256=" + hex.EncodeToString(mac.Sum(nil)); got.header.Get("Faucet-Signature") != want {
		t.Errorf("run %s: Faucet-Signature %q, want %q", runID, got.header.Get("Faucet-Signature"), want)
	}
	if got.header.Get("Faucet-Delivery-Id") != d.DeliveryId || got.doc["delivery_id"] != d.DeliveryId {
		t.Errorf("run %s: delivery id header %q body %v, want %s", runID, got.header.Get("Faucet-Delivery-Id"), got.doc["delivery_id"], d.DeliveryId)
	}
	if got.doc["status"] != string(status) || got.doc["event"] != "run."+string(status) {
		t.Errorf("run %s: body %s, want status %s", runID, got.body, status)
	}
}

func TestCallbacksAreSignedRetriedAndFiltered(t *testing.T) {
	eachHistory(t, func(t *testing.T, h history) {
		rcv := newReceiver(t)
		s := start(t, serverOpts{history: h.url(t), args: []string{
			"--callback-allow-host", "127.0.0.1", "--callback-secret", callbackSecret,
		}})
		dir := t.TempDir()
		headers := map[string]string{"X-Tenant": "t1"}
		extra := map[string]any{"team": "data"}
		spec := client.CallbackSpec{Url: rcv.url("/hook?src=e2e"), Headers: &headers, ExtraFields: &extra}

		// The receiver is down when the run ends: the attempt fails and
		// is retried; once it is up, the retry delivers.
		done := s.submit(client.SubmitRequest{Config: generateToFile(2, filepath.Join(dir, "a.jsonl")), Callback: &spec}).RunId
		s.await(done, client.RunStatusCompleted)
		first := awaitDelivery(t, s, done, failedAttempt)
		rcv.up()
		got := rcv.await(s, done)
		checkSent(t, got, first, done, client.RunStatusCompleted)
		if got.path != "/hook?src=e2e" || got.header.Get("X-Tenant") != "t1" || got.doc["team"] != "data" || got.doc["records_written"] != float64(2) {
			t.Errorf("callback request %s %v %s", got.path, got.header, got.body)
		}
		settled := awaitDelivery(t, s, done, func(d client.CallbackDelivery) bool { return d.State == client.CallbackStateDelivered })
		if settled.DeliveryId != first.DeliveryId || settled.Attempts < 2 || settled.LastStatusCode == nil || *settled.LastStatusCode != http.StatusNoContent {
			t.Errorf("settled delivery %+v, first %+v", settled, first)
		}

		// A callback on failed only: a completed run has no delivery, and
		// the row would have been written with its terminal record.
		onFailed := spec
		onFailed.On = &[]client.CallbackSpecOn{client.CallbackSpecOn("failed")}
		quiet := s.submit(client.SubmitRequest{Config: generateToFile(1, filepath.Join(dir, "b.jsonl")), Callback: &onFailed}).RunId
		if rec := s.await(quiet, client.RunStatusCompleted); rec.CallbackDeliveries != nil && len(*rec.CallbackDeliveries) != 0 {
			t.Errorf("a completed run with on: [failed] has deliveries %+v", *rec.CallbackDeliveries)
		}

		// A cancelled run calls back with its status.
		held := s.submit(client.SubmitRequest{Config: holding(1, filepath.Join(dir, "c.jsonl")), Callback: &spec}).RunId
		s.await(held, client.RunStatusRunning)
		if status, _, body := s.call("POST", "/v1/runs/"+held+"/cancel", ""); status != http.StatusAccepted {
			t.Fatalf("cancel: %d %s", status, body)
		}
		s.await(held, client.RunStatusCancelled)
		checkSent(t, rcv.await(s, held), delivery(t, s, held), held, client.RunStatusCancelled)
		if n := len(rcv.of(quiet)); n != 0 {
			t.Errorf("the run with on: [failed] called back %d times", n)
		}

		// The receiver has both requests; the dispatcher counts each
		// once it has read the answer, a moment later.
		s.awaitMetric("faucet_callback_deliveries_total", map[string]string{"result": "retried"}, "≥ 1", func(v float64) bool { return v >= 1 })
		s.awaitMetric("faucet_callback_deliveries_total", map[string]string{"result": "delivered"}, "≥ 2", func(v float64) bool { return v >= 2 })
		// The stored headers are not shown back, and no secret is logged.
		if strings.Contains(s.stderr.String(), callbackSecret) {
			t.Errorf("the server logged the callback secret")
		}
	})
}

// A run that ended before a kill -9 and one the kill interrupted both call
// back after the restart: the first from the outbox row written with its
// terminal record, the second from the row crash recovery wrote when it
// failed the run.
func TestCallbacksSurviveAKill9(t *testing.T) {
	eachHistory(t, func(t *testing.T, h history) {
		rcv := newReceiver(t)
		dataDir, hist := t.TempDir(), h.url(t)
		// Through the environment, as the README advises for the secret.
		env := []string{"FAUCET_CALLBACK_ALLOW_HOST=127.0.0.1,localhost", "FAUCET_CALLBACK_SECRET=" + callbackSecret}
		s := start(t, serverOpts{history: hist, dataDir: dataDir, env: env})
		dir := t.TempDir()
		spec := client.CallbackSpec{Url: rcv.url("/hook")}

		done := s.submit(client.SubmitRequest{Config: generateToFile(1, filepath.Join(dir, "a.jsonl")), Callback: &spec}).RunId
		s.await(done, client.RunStatusCompleted)
		pending := awaitDelivery(t, s, done, failedAttempt)
		held := s.submit(client.SubmitRequest{Config: holding(1, filepath.Join(dir, "b.jsonl")), Callback: &spec}).RunId
		s.await(held, client.RunStatusRunning)
		if err := s.cmd.Process.Kill(); err != nil {
			t.Fatal(err)
		}
		<-s.exited

		rcv.up()
		s2 := start(t, serverOpts{history: hist, dataDir: dataDir, env: env})
		checkSent(t, rcv.await(s2, done), pending, done, client.RunStatusCompleted)
		recovered := rcv.await(s2, held)
		checkSent(t, recovered, delivery(t, s2, held), held, client.RunStatusFailed)
		if e, _ := recovered.doc["error"].(string); !strings.Contains(e, "before the run finished") {
			t.Errorf("recovered run's callback error = %q", e)
		}
		// At least once, under one id: any repeat carries the same id.
		for _, id := range []string{done, held} {
			awaitDelivery(t, s2, id, func(d client.CallbackDelivery) bool { return d.State == client.CallbackStateDelivered })
			for _, g := range rcv.of(id) {
				if g.header.Get("Faucet-Delivery-Id") != delivery(t, s2, id).DeliveryId {
					t.Errorf("run %s was delivered under two ids", id)
				}
			}
		}
	})
}

func TestBackfillSubmitsOneRunPerUnitAtItsClock(t *testing.T) {
	eachHistory(t, func(t *testing.T, h history) {
		s := start(t, serverOpts{history: h.url(t)})
		ctx := context.Background()
		c := s.admin()
		dir := t.TempDir()
		// The source reads the unit's window; the sink's path renders the
		// run's clock, which is the unit's start.
		config := fmt.Sprintf("version: 1\nname: daily\npipeline:\n"+
			"  source: {type: gate, config: {rows: 1, password: \"${backfill.start}\"}}\n"+
			"  sink: {type: jsonl, config: {path: %q}}\n", filepath.Join(dir, "out-${now:%Y%m%d}.jsonl"))
		body := client.BackfillRequest{Config: config, From: "2026-01-01", To: "2026-01-04", Window: ptr("1d")}

		before := func() int {
			page, err := c.ListRunsWithResponse(ctx, nil)
			if err != nil || page.JSON200 == nil {
				t.Fatalf("list: %v", err)
			}
			return len(page.JSON200.Runs)
		}
		// Refusals write nothing.
		bad := map[string]client.BackfillRequest{
			"end before start": {Config: config, From: "2026-01-04", To: "2026-01-01", Window: ptr("1d")},
			"100,000 units":    {Config: config, From: "2026-01-01T00:00:00Z", To: "2026-03-12T10:40:00Z", Window: ptr("1m")},
		}
		for name, b := range bad {
			resp, err := c.SubmitBackfillWithResponse(ctx, b)
			if err != nil || resp.StatusCode() != http.StatusBadRequest {
				t.Errorf("%s: %v %d %s", name, err, resp.StatusCode(), resp.Body)
			}
		}
		withCallback := body
		withCallback.Callback = &client.CallbackSpec{Url: "https://hooks.example/x"}
		if resp, err := c.SubmitBackfillWithResponse(ctx, withCallback); err != nil || resp.StatusCode() != http.StatusUnprocessableEntity ||
			!strings.Contains(string(resp.Body), "callback") {
			t.Errorf("backfill with a callback: %v %d %s", err, resp.StatusCode(), resp.Body)
		}
		if n := before(); n != 0 {
			t.Fatalf("refused backfills wrote %d runs", n)
		}

		post := func() client.BackfillResponse {
			t.Helper()
			resp, err := c.SubmitBackfillWithResponse(ctx, body)
			if err != nil || resp.JSON202 == nil {
				t.Fatalf("backfill: %v %d %s", err, resp.StatusCode(), resp.Body)
			}
			return *resp.JSON202
		}
		first := post()
		if first.Planned != 3 || first.Created != 3 || first.Replayed != 0 || len(first.Units) != 3 {
			t.Fatalf("backfill = %+v", first)
		}
		for i, u := range first.Units {
			day := fmt.Sprintf("2026010%d", i+1)
			if u.Unit != day+"T000000Z" || u.RunId == nil || u.Replayed {
				t.Fatalf("unit %d = %+v", i, u)
			}
			rec := s.await(*u.RunId, client.RunStatusCompleted)
			if rec.Name == nil || *rec.Name != "daily-backfill-"+u.Unit || rec.Clock == nil || !strings.HasPrefix(*rec.Clock, "2026-01-0"+fmt.Sprint(i+1)) {
				t.Errorf("unit %s run = name %s clock %s", u.Unit, deref(rec.Name), deref(rec.Clock))
			}
			if _, err := os.Stat(filepath.Join(dir, "out-"+day+".jsonl")); err != nil {
				t.Errorf("unit %s wrote no file at its clock: %v", u.Unit, err)
			}
		}
		// Posting the same backfill again replays every unit.
		again := post()
		if again.Created != 0 || again.Replayed != 3 || again.Backfill != first.Backfill {
			t.Fatalf("re-posted backfill = %+v", again)
		}
		for i, u := range again.Units {
			if u.RunId == nil || *u.RunId != *first.Units[i].RunId || !u.Replayed {
				t.Errorf("re-posted unit %d = %+v, first %+v", i, u, first.Units[i])
			}
		}
		if n := before(); n != 3 {
			t.Errorf("%d runs after a backfill and its replay, want 3", n)
		}
	})
}

// A clustered server stores a run for whichever member delivers its
// callback, so it refuses a literal header value (it would be stored in
// clear text) and resolves ${env:NAME} from the delivering member's
// environment.
func TestClusteredCallbackHeadersComeFromTheEnvironment(t *testing.T) {
	t.Parallel()
	rcv := newReceiver(t)
	rcv.up()
	s := start(t, serverOpts{
		history: "sqlite:" + filepath.Join(t.TempDir(), "history.db"), bin: fastBin,
		args: []string{"--cluster", "--callback-allow-host", "127.0.0.1"},
		env:  []string{"HOOK_TOKEN=Bearer from-the-environment"},
	})
	config := generateToFile(1, filepath.Join(t.TempDir(), "out.jsonl"))
	for value, why := range map[string]string{
		"Bearer literal":     "${env:NAME}",
		"${env:UNSET_TOKEN}": "UNSET_TOKEN is not set",
	} {
		body, _ := json.Marshal(client.SubmitRequest{Config: config, Callback: &client.CallbackSpec{Url: rcv.url("/c"), Headers: &map[string]string{"Authorization": value}}})
		st, hd, b := s.rawRequest(http.MethodPost, "/v1/runs", "application/json", string(body))
		if p := wantProblem(t, "header "+value, st, hd, b, http.StatusUnprocessableEntity, "unprocessable"); !strings.Contains(p.Detail, why) {
			t.Errorf("header %q: %q does not say %q", value, p.Detail, why)
		}
	}
	id := s.submit(client.SubmitRequest{Config: config, Callback: &client.CallbackSpec{
		Url: rcv.url("/c"), Headers: &map[string]string{"Authorization": "${env:HOOK_TOKEN}"},
	}}).RunId
	s.await(id, client.RunStatusCompleted)
	if got := rcv.await(s, id); got.header.Get("Authorization") != "Bearer from-the-environment" {
		t.Errorf("Authorization = %q", got.header.Get("Authorization"))
	}
}
