package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/internal/testpg"
	"github.com/faucet-dev/faucet/openapi/client"
)

// follower is one open SSE stream of a run's log.
type follower struct {
	resp *http.Response
	// ended gets whether the stream ended with an end event.
	ended chan bool
}

// follow opens a log stream; it returns the response when it was refused.
func follow(t *testing.T, s *server, id string) (*follower, *http.Response) {
	t.Helper()
	req, err := http.NewRequest("GET", s.url+"/v1/runs/"+id+"/logs", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, resp
	}
	f := &follower{resp: resp, ended: make(chan bool, 1)}
	go func() {
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if sc.Text() == "event: end" {
				f.ended <- true
				return
			}
		}
		f.ended <- false
	}()
	return f, nil
}

// Log followers are capped per run and in total (429 + Retry-After), and the
// followers on one member of a run another member executes share one poller
// of the history, whose lines reach every one of them.
func TestLogFollowersAreCappedAndShareOnePoller(t *testing.T) {
	hist := testpg.Database(t)
	owner := startMember(t, hist)
	out := t.TempDir()
	runs := []string{
		owner.submit(client.SubmitRequest{Config: holding(2, filepath.Join(out, "a.jsonl"))}).RunId,
		owner.submit(client.SubmitRequest{Config: holding(2, filepath.Join(out, "b.jsonl"))}).RunId,
	}
	for _, id := range runs {
		owner.await(id, client.RunStatusRunning)
	}
	// Joined after the runs were claimed, so it executes neither.
	peer := startMember(t, hist, "--max-log-followers-per-run", "4", "--max-log-followers", "6")

	var followers []*follower
	for range 4 {
		f, refused := follow(t, peer.server, runs[0])
		if refused != nil {
			t.Fatalf("follower within the caps refused: %d", refused.StatusCode)
		}
		followers = append(followers, f)
	}
	wantRefused := func(id, why string) {
		t.Helper()
		_, refused := follow(t, peer.server, id)
		if refused == nil || refused.StatusCode != http.StatusTooManyRequests || refused.Header.Get("Retry-After") == "" {
			t.Fatalf("follower past the cap %s: %+v, want 429 with Retry-After", why, refused)
		}
	}
	wantRefused(runs[0], "per run")
	for range 2 {
		f, refused := follow(t, peer.server, runs[1])
		if refused != nil {
			t.Fatalf("follower of another run refused: %d", refused.StatusCode)
		}
		followers = append(followers, f)
	}
	wantRefused(runs[1], "in total")
	if feeds, n := peer.metric("faucet_log_feeds", nil), peer.metric("faucet_log_followers", nil); feeds != 2 || n != 6 {
		t.Fatalf("%v feeds for %v followers, want one feed per run for 6 followers", feeds, n)
	}

	// Every follower sees its run end, through its run's one feed.
	for _, id := range runs {
		if resp, err := owner.admin().CancelRunWithResponse(context.Background(), id); err != nil || resp.StatusCode() >= 300 {
			t.Fatalf("cancel: %v %v", err, resp.StatusCode())
		}
	}
	for i, f := range followers {
		if !<-f.ended {
			t.Fatalf("follower %d's stream closed without an end event", i)
		}
	}
	awaitMetric(t, peer.server, "faucet_log_followers", 0)
	awaitMetric(t, peer.server, "faucet_log_feeds", 0)
}

// awaitMetric polls a gauge until it reads want.
func awaitMetric(t *testing.T, s *server, name string, want float64) {
	t.Helper()
	s.awaitMetric(name, nil, fmt.Sprint(want), func(v float64) bool { return v == want })
}

// trickle opens a connection from the loopback address src and sends a
// request whose body it never finishes.
func trickle(t *testing.T, s *server, src, method, path string, auth bool) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	head := fmt.Sprintf("%s %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n", method, path)
	if auth {
		head += "Authorization: Bearer " + adminToken + "\r\n"
	}
	if _, err := io.WriteString(c, head+"\r\n{"); err != nil {
		t.Fatal(err)
	}
	return c
}

// Slow clients cannot take the server: a response to a request whose body
// is not read closes the connection instead of waiting for the body, a
// client address gets at most its share of connections (the rest 503 on
// the spot), and /healthz answers everyone else throughout.
func TestSlowClientsCannotStarveTheServer(t *testing.T) {
	s := start(t, serverOpts{args: []string{"--max-connections-per-client", "10", "--max-connections", "100"}})
	healthy := func() {
		t.Helper()
		resp, err := http.Get(s.url + "/healthz")
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("/healthz for a well-behaved client: %v %v", err, resp)
		}
		resp.Body.Close()
	}

	// Routes that never read the body answer at once and hang up.
	for _, c := range []struct{ method, path string }{{"POST", "/v1/runs"}, {"GET", "/healthz"}, {"POST", "/nowhere"}} {
		conn := trickle(t, s, "127.0.0.2", c.method, c.path, false)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s %s with an unfinished body: %v", c.method, c.path, err)
		}
		if !resp.Close {
			t.Fatalf("%s %s with an unread body: %d without Connection: close", c.method, c.path, resp.StatusCode)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		if n, err := conn.Read(make([]byte, 1)); n != 0 || err == nil {
			t.Fatalf("%s %s: the server kept the connection open after its answer", c.method, c.path)
		}
		healthy()
	}

	// Bodies the server does read hold their connection while they
	// trickle: each address keeps at most its cap of them, the next ones
	// are refused with a 503, and the others are served.
	for _, src := range []string{"127.0.0.2", "127.0.0.3"} {
		for range 10 {
			trickle(t, s, src, "POST", "/v1/runs", true)
		}
		for range 5 {
			conn := trickle(t, s, src, "POST", "/v1/runs", true)
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("connection over the cap from %s: %v", src, err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "limit per client") || resp.Header.Get("Retry-After") == "" {
				t.Fatalf("connection over the cap from %s: %d %s", src, resp.StatusCode, body)
			}
		}
		healthy()
	}
}
