package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/faucet-dev/faucet/internal/testpg"
	"github.com/faucet-dev/faucet/internal/testwait"
	"github.com/faucet-dev/faucet/openapi/client"
)

// Cluster mode end to end: several faucet serve processes on one history,
// killed with SIGKILL while they hold runs. Every claim about which run went
// where is read back through the API (run logs name the instance that
// claimed each attempt), and every claim about what was written from what
// the sinks received.

// clusterLease and clusterPoll are short, so takeovers happen in seconds.
const (
	clusterLease = "2"
	clusterPoll  = "0.2"
)

// clusterHistory is one kind of shared history the cluster suites run on.
type clusterHistory struct {
	name string
	// url returns the history URL every member of one test's cluster shares.
	url func(t *testing.T) string
}

var clusterHistories = []clusterHistory{
	{name: "postgres", url: func(t *testing.T) string { return testpg.Database(t) }},
	{name: "sqlite", url: func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "shared.db") }},
}

// eachClusterHistory runs f as a subtest per shared history.
func eachClusterHistory(t *testing.T, f func(t *testing.T, hist string)) {
	for _, h := range clusterHistories {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			f(t, h.url(t))
		})
	}
}

// member is one running cluster member.
type member struct {
	*server
	// id is the instance id the member reports in /readyz.
	id string
}

// startMember starts one cluster member on hist.
func startMember(t *testing.T, hist string, args ...string) *member {
	t.Helper()
	all := append([]string{"--cluster", "--lease-ttl-secs", clusterLease, "--cluster-poll-secs", clusterPoll}, args...)
	s := start(t, serverOpts{history: hist, args: all, bin: fastBin})
	rs := s.ready()
	if !rs.Cluster.Enabled || rs.Cluster.Instance == nil || *rs.Cluster.Instance == "" {
		t.Fatalf("member's /readyz: %+v", rs)
	}
	return &member{server: s, id: *rs.Cluster.Instance}
}

// startCluster starts n members on hist and waits until each sees all n.
func startCluster(t *testing.T, n int, hist string, args ...string) []*member {
	t.Helper()
	ms := make([]*member, n)
	for i := range ms {
		ms[i] = startMember(t, hist, args...)
	}
	for _, m := range ms {
		testwait.Until(t, time.Minute, func() error {
			if got := m.ready().Cluster.Instances; got < int64(n) {
				return fmt.Errorf("member %s never saw %d members (saw %d)", m.id, n, got)
			}
			return nil
		})
	}
	// Once every member has beaten, each one's next heartbeat counts them
	// all in its gauge.
	for _, m := range ms {
		m.awaitMetric("faucet_cluster_members", nil, "every member", func(v float64) bool { return v == float64(n) })
	}
	return ms
}

// awaitMetric polls a metric of the server (as metric reads it) until ok
// accepts its value, and returns the value; want says what ok waits for.
func (s *server) awaitMetric(name string, match map[string]string, want string, ok func(float64) bool) float64 {
	s.t.Helper()
	var v float64
	testwait.Until(s.t, time.Minute, func() error {
		if v = s.metric(name, match); !ok(v) {
			return fmt.Errorf("%s%v is %v, never %s", name, match, v, want)
		}
		return nil
	})
	return v
}

// ready reads /readyz.
func (s *server) ready() client.ReadyStatus {
	s.t.Helper()
	resp, err := s.admin().ReadyzWithResponse(context.Background())
	if err != nil {
		s.t.Fatal(err)
	}
	switch {
	case resp.JSON200 != nil:
		return *resp.JSON200
	case resp.JSON503 != nil:
		return *resp.JSON503
	}
	s.t.Fatalf("readyz: %d %s", resp.StatusCode(), resp.Body)
	return client.ReadyStatus{}
}

// kill9 kills the member with SIGKILL and waits until it is gone.
func (m *member) kill9() {
	m.t.Helper()
	if err := m.cmd.Process.Kill(); err != nil {
		m.t.Fatal(err)
	}
	<-m.exited
}

var claimedRE = regexp.MustCompile(`^run claimed by instance (\S+) \(attempt (\d+)\)$`)

// claims reads from a run's persisted logs which instance claimed each
// attempt of it.
func (s *server) claims(runID string) map[int]string {
	s.t.Helper()
	out := map[int]string{}
	for _, l := range s.logs(runID, 0, 10000) {
		if m := claimedRE.FindStringSubmatch(l.Line); m != nil {
			n, _ := strconv.Atoi(m[2])
			out[n] = m[1]
		}
	}
	return out
}

var shardClaimedRE = regexp.MustCompile(`^shard claimed shard=(\d+) instance=(\S+) attempt=(\d+)$`)

// shardClaim is one claim of a shard, as its claim line logged it.
type shardClaim struct {
	shard, instance string
	attempt         int
}

// shardClaimLines reads a sharded run's persisted shard claim lines, in
// log order.
func (s *server) shardClaimLines(runID string) []shardClaim {
	s.t.Helper()
	var out []shardClaim
	for after := int64(0); ; {
		page := s.logs(runID, after, 10000)
		if len(page) == 0 {
			return out
		}
		for _, l := range page {
			if m := shardClaimedRE.FindStringSubmatch(l.Line); m != nil {
				n, _ := strconv.Atoi(m[3])
				out = append(out, shardClaim{shard: m[1], instance: m[2], attempt: n})
			}
		}
		after = page[len(page)-1].Seq
	}
}

// shardClaims reads from a sharded run's persisted logs which instances
// claimed its shards: shard id → instances, in claim order.
func (s *server) shardClaims(runID string) map[string][]string {
	s.t.Helper()
	out := map[string][]string{}
	for _, c := range s.shardClaimLines(runID) {
		out[c.shard] = append(out[c.shard], c.instance)
	}
	return out
}

// claimedBy polls until attempt of runID is claimed and returns the id of
// the instance that claimed it.
func claimedBy(tb testing.TB, via *server, runID string, attempt int) string {
	tb.Helper()
	var id string
	testwait.Until(tb, 2*time.Minute, func() error {
		var ok bool
		if id, ok = via.claims(runID)[attempt]; !ok {
			return fmt.Errorf("run %s attempt %d was never claimed\n%s", runID, attempt, via.stderr.String())
		}
		return nil
	})
	return id
}

// awaitClaim is claimedBy returning the member that claimed the attempt.
func awaitClaim(t *testing.T, via *member, members []*member, runID string, attempt int) *member {
	t.Helper()
	id := claimedBy(t, via.server, runID, attempt)
	for _, m := range members {
		if m.id == id {
			return m
		}
	}
	t.Fatalf("run %s attempt %d was claimed by %s, no member of this test", runID, attempt, id)
	return nil
}

// appendTo is generateToFile writing in append mode, so a run executed twice
// leaves twice its rows.
func appendTo(rows int, path string) string {
	return fmt.Sprintf("version: 1\nname: gen\npipeline:\n  source: {type: generate, config: {count: %d}}\n  sink: {type: jsonl, config: {path: %q, write_mode: append}}\n", rows, path)
}

// holdFor emits rows, keeps the run in flight for ms, then completes; the
// sink overwrites its file, so a run executed again leaves the same file.
func holdFor(rows, ms int, path string) string {
	return fmt.Sprintf("version: 1\nname: hold-for\npipeline:\n  source: {type: gate, config: {rows: %d, hold_ms: %d}}\n  sink: {type: jsonl, config: {path: %q}}\n", rows, ms, path)
}

// killing is a run whose source kills the faucet serve executing it (with
// SIGKILL) once it has flushed one row.
func killing(path string) string {
	return fmt.Sprintf("version: 1\nname: killer\npipeline:\n  source: {type: gate, config: {rows: 1, kill_server: true}}\n  sink: {type: jsonl, config: {path: %q}}\n", path)
}

// awaitDeath waits until one of members exits by itself and returns its
// index.
func awaitDeath(t *testing.T, members []*member) int {
	t.Helper()
	dead := -1
	testwait.Until(t, 2*time.Minute, func() error {
		for i, m := range members {
			select {
			case <-m.exited:
				dead = i
				return nil
			default:
			}
		}
		return errors.New("no member died")
	})
	return dead
}

// metric reads one counter or gauge of a server, summed over the series
// whose labels include match.
func (s *server) metric(name string, match map[string]string) float64 {
	s.t.Helper()
	resp, err := http.Get(s.url + "/metrics")
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		s.t.Fatalf("metrics do not parse: %v", err)
	}
	total := 0.0
	for _, m := range families[name].GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		ok := true
		for k, v := range match {
			ok = ok && labels[k] == v
		}
		if !ok {
			continue
		}
		if c := m.GetCounter(); c != nil {
			total += c.GetValue()
		} else {
			total += m.GetGauge().GetValue()
		}
	}
	return total
}

func TestClusterRunsEachRunExactlyOnce(t *testing.T) {
	eachClusterHistory(t, func(t *testing.T, hist string) {
		members := startCluster(t, 3, hist, "--max-concurrent-runs", "4", "--log-level", "warn")
		dir := t.TempDir()
		const runs, rows = 300, 5
		ids := make([]string, runs)
		var wg sync.WaitGroup
		for w := range 6 {
			wg.Go(func() {
				for i := w; i < runs; i += 6 {
					m := members[i%len(members)]
					sub := m.submit(client.SubmitRequest{Config: appendTo(rows, filepath.Join(dir, fmt.Sprintf("run-%03d.jsonl", i)))})
					if sub.Status != client.RunStatusPending {
						t.Errorf("a clustered submit answered %s, want pending", sub.Status)
					}
					if sub.Warnings == nil || !strings.Contains(strings.Join(*sub.Warnings, "\n"), "at-least-once") {
						t.Errorf("an append-mode clustered run got no at-least-once warning: %v", sub.Warnings)
					}
					ids[i] = sub.RunId
				}
			})
		}
		wg.Wait()
		for i, id := range ids {
			rec := members[(i+1)%len(members)].await(id, client.RunStatusCompleted)
			if rec.RecordsWritten != rows || rec.Attempt != 0 {
				t.Fatalf("run %d = %+v", i, rec)
			}
		}
		// What the sinks received: every run's rows, once.
		for i := range runs {
			if n := countLines(t, filepath.Join(dir, fmt.Sprintf("run-%03d.jsonl", i))); n != rows {
				t.Fatalf("run %d's sink file has %d lines, want %d: the run executed %v times", i, n, rows, float64(n)/rows)
			}
		}
		// Every member claimed some of them, and the claims add up.
		total := 0.0
		for _, m := range members {
			n := m.metric("faucet_cluster_claims_total", map[string]string{"kind": "run"})
			if n == 0 {
				t.Errorf("member %s executed none of the %d runs", m.id, runs)
			}
			total += n
		}
		if total != runs {
			t.Fatalf("the members claimed %v runs in all, want %d", total, runs)
		}
	})
}

func TestClusterSurvivorsTakeOverAKilledMembersRuns(t *testing.T) {
	eachClusterHistory(t, func(t *testing.T, hist string) {
		members := startCluster(t, 3, hist, "--max-concurrent-runs", "2")
		dir := t.TempDir()
		const rows = 10
		var ids []string
		for i := range 6 {
			ids = append(ids, members[i%3].submit(client.SubmitRequest{Config: holdFor(rows, 3000, filepath.Join(dir, fmt.Sprintf("run-%d.jsonl", i)))}).RunId)
		}
		// Kill the member that claimed the first run while it runs.
		victim := awaitClaim(t, members[0], members, ids[0], 0)
		members[0].await(ids[0], client.RunStatusRunning)
		victim.kill9()
		var survivor *member
		for _, m := range members {
			if m != victim {
				survivor = m
			}
		}

		reclaimed := 0
		for i, id := range ids {
			rec := survivor.await(id, client.RunStatusCompleted)
			if rec.RecordsWritten != rows {
				t.Fatalf("run %d = %+v", i, rec)
			}
			if n := countLines(t, filepath.Join(dir, fmt.Sprintf("run-%d.jsonl", i))); n != rows {
				t.Fatalf("run %d's sink file has %d lines, want %d", i, n, rows)
			}
			claims := survivor.claims(id)
			switch rec.Attempt {
			case 0:
				if claims[0] == victim.id {
					t.Fatalf("run %d was claimed by the killed member yet never taken over", i)
				}
			case 1:
				// The killed member may have died before persisting its
				// claim line; the takeover's line is always there.
				reclaimed++
				if by, ok := claims[0]; ok && by != victim.id {
					t.Fatalf("run %d was taken over from %s, a live member", i, by)
				}
				if by := claims[1]; by == "" || by == victim.id {
					t.Fatalf("run %d's second attempt was claimed by %q", i, by)
				}
			default:
				t.Fatalf("run %d: attempt %d, want 0 or 1", i, rec.Attempt)
			}
		}
		if rec := survivor.get(ids[0]); rec.Attempt != 1 {
			t.Fatalf("the run the killed member held: attempt %d, want 1", rec.Attempt)
		}
		reclaims := 0.0
		for _, m := range members {
			if m != victim {
				reclaims += m.metric("faucet_cluster_reclaims_total", map[string]string{"kind": "run"})
			}
		}
		if int(reclaims) != reclaimed {
			t.Fatalf("survivors counted %v reclaims, want %d", reclaims, reclaimed)
		}
	})
}

func TestClusterMemberHandsItsRunsOverOnSIGTERM(t *testing.T) {
	eachClusterHistory(t, func(t *testing.T, hist string) {
		members := startCluster(t, 2, hist, "--max-concurrent-runs", "1")
		dir := t.TempDir()
		var ids []string
		for i := range 2 {
			ids = append(ids, members[i].submit(client.SubmitRequest{Config: holdFor(4, 1500, filepath.Join(dir, fmt.Sprintf("run-%d.jsonl", i)))}).RunId)
		}
		leaving := awaitClaim(t, members[0], members, ids[0], 0)
		members[0].await(ids[0], client.RunStatusRunning)
		staying := members[0]
		if staying == leaving {
			staying = members[1]
		}
		if err := leaving.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		<-leaving.exited
		if leaving.waitErr != nil {
			t.Fatalf("the leaving member exited with %v\n%s", leaving.waitErr, leaving.stderr.String())
		}
		for i, id := range ids {
			rec := staying.await(id, client.RunStatusCompleted)
			if rec.RecordsWritten != 4 {
				t.Fatalf("run %d = %+v", i, rec)
			}
			if n := countLines(t, filepath.Join(dir, fmt.Sprintf("run-%d.jsonl", i))); n != 4 {
				t.Fatalf("run %d's sink file has %d lines, want 4", i, n)
			}
		}
		rec := staying.get(ids[0])
		if rec.Attempt != 1 || staying.claims(ids[0])[1] != staying.id {
			t.Fatalf("the run the leaving member held: attempt %d, claims %v", rec.Attempt, staying.claims(ids[0]))
		}
		// Handed over, not left to lapse: nothing was reclaimed.
		if n := staying.metric("faucet_cluster_reclaims_total", map[string]string{"kind": "run"}); n != 0 {
			t.Fatalf("%v runs were reclaimed; the leaving member should have handed them over", n)
		}
	})
}

func TestClusterPoisonsARunThatKillsEveryMember(t *testing.T) {
	eachClusterHistory(t, func(t *testing.T, hist string) {
		// The default cap, which the flag's help and the README promise
		// lets such a run execute maxAttempts+1 times.
		const maxAttempts = 3
		// The poisoned run calls back, from whichever member's sweep
		// poisoned it.
		rcv := newReceiver(t)
		rcv.up()
		allow := []string{"--callback-allow-host", "127.0.0.1", "--callback-secret", callbackSecret}
		members := startCluster(t, 3, hist, allow...)
		id := members[0].submit(client.SubmitRequest{
			Config: killing(filepath.Join(t.TempDir(), "out.jsonl")), Callback: &client.CallbackSpec{Url: rcv.url("/poisoned")},
		}).RunId
		// The run kills whichever member executes it; the member comes back.
		// Attempts 0 to maxAttempts each take one member down; the lapse of
		// the last poisons the run.
		for range maxAttempts + 1 {
			dead := awaitDeath(t, members)
			// Only the run's source sends SIGKILL.
			if st, ok := members[dead].cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !st.Signaled() || st.Signal() != syscall.SIGKILL {
				t.Fatalf("member %s ended with %v, not killed by the run\n%s", members[dead].id, members[dead].cmd.ProcessState, members[dead].stderr.String())
			}
			members[dead] = startMember(t, hist, allow...)
		}
		rec := members[0].await(id, client.RunStatusFailed)
		if rec.Attempt != maxAttempts || rec.Error == nil || !strings.Contains(*rec.Error, "poison") {
			t.Fatalf("poisoned run = attempt %d, error %s", rec.Attempt, deref(rec.Error))
		}
		checkSent(t, rcv.await(members[0].server, id), delivery(t, members[0].server, id), id, client.RunStatusFailed)
		// Poisoned, the run is executed no more: every member lives on.
		for _, m := range members {
			select {
			case <-m.exited:
				t.Fatalf("member %s died after the run was poisoned\n%s", m.id, m.stderr.String())
			default:
			}
		}
		// The member whose sweep poisoned it counted it, once; the
		// members killed before could not have.
		poisoned := 0.0
		testwait.Until(t, time.Minute, func() error {
			poisoned = 0
			for _, m := range members {
				poisoned += m.metric("faucet_cluster_poisoned_total", map[string]string{"kind": "run"})
			}
			if poisoned == 0 {
				return errors.New("no member counted the poisoned run")
			}
			return nil
		})
		if poisoned != 1 {
			t.Fatalf("the members counted %v poisoned runs, want 1", poisoned)
		}
	})
}

func TestClusterCancelReachesAnotherMembersRun(t *testing.T) {
	eachClusterHistory(t, func(t *testing.T, hist string) {
		members := startCluster(t, 2, hist, "--max-concurrent-runs", "1")
		dir := t.TempDir()
		var running []string
		for i := range 2 {
			running = append(running, members[i].submit(client.SubmitRequest{Config: holdingAppend(3, filepath.Join(dir, fmt.Sprintf("hold-%d.jsonl", i)))}).RunId)
		}
		for _, id := range running {
			members[0].await(id, client.RunStatusRunning)
		}
		// Every slot is taken: a third run stays pending, and a cancel ends
		// it at once.
		pending := members[0].submit(client.SubmitRequest{Config: appendTo(3, filepath.Join(dir, "never.jsonl"))}).RunId
		resp, err := members[1].admin().CancelRunWithResponse(context.Background(), pending)
		if err != nil || resp.StatusCode() != http.StatusAccepted {
			t.Fatalf("cancel pending run: %v %d", err, resp.StatusCode())
		}
		if st := members[0].get(pending).Status; st != client.RunStatusCancelled {
			t.Fatalf("cancelled pending run is %s", st)
		}
		// A cancel on one member stops the run another member executes.
		for _, id := range running {
			owner := awaitClaim(t, members[0], members, id, 0)
			other := members[0]
			if owner == other {
				other = members[1]
			}
			// Cancel only once the owner has reported its 3 acknowledged
			// records: a cancel that lands before the source's first batch
			// rightly ends the run with none.
			testwait.Until(t, time.Minute, func() error {
				if rec := other.get(id); rec.RecordsWritten != 3 {
					return fmt.Errorf("run %s never reported its 3 records: %+v", id, rec)
				}
				return nil
			})
			resp, err := other.admin().CancelRunWithResponse(context.Background(), id)
			if err != nil || resp.StatusCode() != http.StatusAccepted {
				t.Fatalf("cancel on the other member: %v %d", err, resp.StatusCode())
			}
			rec := other.await(id, client.RunStatusCancelled)
			if rec.RecordsWritten != 3 {
				t.Fatalf("cancelled run = %+v, want the 3 acknowledged records", rec)
			}
		}
		for i := range 2 {
			if n := countLines(t, filepath.Join(dir, fmt.Sprintf("hold-%d.jsonl", i))); n != 3 {
				t.Fatalf("cancelled run %d flushed %d lines, want 3", i, n)
			}
		}
		if n := countLinesIfExists(t, filepath.Join(dir, "never.jsonl")); n != 0 {
			t.Fatalf("the run cancelled while pending wrote %d lines", n)
		}
	})
}

// awaitSharded waits for a sharded run to end and fails t, with the lines
// its shards logged, unless it completed.
func awaitSharded(t *testing.T, via *member, runID string) client.RunRecord {
	t.Helper()
	var rec client.RunRecord
	err := testwait.Wait(3*time.Minute, func() error {
		switch rec = via.get(runID); {
		case rec.Status == client.RunStatusCompleted, isTerminal(rec.Status):
			return nil
		}
		return errors.New("not finished")
	})
	if err != nil || rec.Status != client.RunStatusCompleted {
		var lines []string
		for _, l := range via.logs(runID, 0, 10000) {
			lines = append(lines, string(l.Level)+" "+l.Line)
		}
		t.Fatalf("sharded run %s is %s (error %s), want completed; its log:\n%s", runID, rec.Status, deref(rec.Error), strings.Join(lines, "\n"))
	}
	return rec
}

// shardedGenerate is a Mode B run: rows generated rows split into shards
// shards, into the sink given as a YAML flow mapping.
func shardedGenerate(rows, shards int, sink string) string {
	return fmt.Sprintf("version: 1\nname: sharded\nshard: {count: %d}\npipeline:\n  source: {type: generate, config: {count: %d}}\n  sink: %s\n", shards, rows, sink)
}

func TestClusterShardsOneRunAcrossMembers(t *testing.T) {
	hist := testpg.Database(t)
	members := startCluster(t, 3, hist, "--max-concurrent-runs", "2")
	const rows = 1_000_000
	id := members[0].submit(client.SubmitRequest{Config: shardedGenerate(rows, 8, "{type: stdout, config: {}}")}).RunId
	rec := awaitSharded(t, members[1], id)
	if rec.RecordsWritten != rows {
		t.Fatalf("sharded run wrote %d records, want %d", rec.RecordsWritten, rows)
	}
	claims := members[2].shardClaims(id)
	if len(claims) != 8 {
		t.Fatalf("%d shards were claimed, want 8: %v", len(claims), claims)
	}
	workers := map[string]bool{}
	for _, by := range claims {
		workers[by[len(by)-1]] = true
	}
	if len(workers) < 2 {
		t.Fatalf("every shard ran on one member: %v", claims)
	}
	shardClaims := 0.0
	for _, m := range members {
		shardClaims += m.metric("faucet_cluster_claims_total", map[string]string{"kind": "shard"})
	}
	if shardClaims < 8 {
		t.Fatalf("the members counted %v shard claims, want at least the 8 shards", shardClaims)
	}
}

func TestClusterCancelStopsEveryShard(t *testing.T) {
	hist := testpg.Database(t)
	members := startCluster(t, 3, hist, "--max-concurrent-runs", "2")
	// Far more rows than the test waits for: the shards run until cancelled.
	id := members[0].submit(client.SubmitRequest{Config: shardedGenerate(2_000_000_000, 6, "{type: stdout, config: {}}")}).RunId
	testwait.Until(t, 2*time.Minute, func() error {
		claims := members[0].shardClaims(id)
		workers := map[string]bool{}
		for _, by := range claims {
			workers[by[0]] = true
		}
		if len(workers) < 2 {
			return fmt.Errorf("the shards never ran on two members: %v", claims)
		}
		return nil
	})
	// Every member counts the cluster's shards, wherever they run: the six
	// are all there, and at least the two on different members running.
	for _, m := range members {
		m.awaitMetric("faucet_cluster_shards", nil, "6", func(v float64) bool { return v == 6 })
		m.awaitMetric("faucet_cluster_shards", map[string]string{"state": "running"}, "at least 2", func(v float64) bool { return v >= 2 })
	}
	resp, err := members[2].admin().CancelRunWithResponse(context.Background(), id)
	if err != nil || resp.StatusCode() != http.StatusAccepted {
		t.Fatalf("cancel: %v %d %s", err, resp.StatusCode(), resp.Body)
	}
	rec := members[1].await(id, client.RunStatusCancelled)
	if rec.FinishedAt == nil {
		t.Fatalf("cancelled sharded run = %+v", rec)
	}
	// The run ended: its shards are no longer work in progress.
	for _, m := range members {
		m.awaitMetric("faucet_cluster_shards", nil, "0", func(v float64) bool { return v == 0 })
	}
	for _, m := range members {
		m.awaitMetric("faucet_cluster_shards_in_flight", nil, "0 (no shard of the cancelled run left running)", func(v float64) bool { return v == 0 })
	}
	cancelled := 0.0
	for _, m := range members {
		cancelled += m.metric("faucet_cluster_shards_finished_total", map[string]string{"status": "cancelled"})
	}
	if cancelled == 0 {
		t.Fatal("no running shard was stopped by the cancel")
	}
}

func TestClusterShardedRunSurvivesAKilledMember(t *testing.T) {
	hist := testpg.Database(t)
	sinkDB := testpg.Database(t)
	if err := execSQL(sinkDB, `CREATE TABLE people (
		id bigint PRIMARY KEY, first_name text, country text, amount numeric,
		created_at timestamptz, active boolean, attributes jsonb)`); err != nil {
		t.Fatal(err)
	}
	members := startCluster(t, 3, hist, "--max-concurrent-runs", "2")
	const rows = 1_000_000
	sink := fmt.Sprintf("{type: postgres, config: {url: %q, table: people, write_mode: upsert, key: [id]}}", sinkDB)
	id := members[0].submit(client.SubmitRequest{Config: shardedGenerate(rows, 8, sink)}).RunId
	// Kill a member while it executes a shard: one whose shard is still
	// running when it is killed, so that shard's lease lapses.
	var victim *member
	testwait.Until(t, 2*time.Minute, func() error {
		for _, m := range members {
			if m.metric("faucet_cluster_shards_in_flight", nil) > 0 {
				victim = m
				return nil
			}
		}
		return fmt.Errorf("no member ever ran a shard\n%s", members[0].stderr.String())
	})
	victim.kill9()
	var survivor *member
	for _, m := range members {
		if m != victim {
			survivor = m
		}
	}
	rec := awaitSharded(t, survivor, id)
	if rec.RecordsWritten != rows {
		t.Fatalf("sharded run wrote %d records, want %d", rec.RecordsWritten, rows)
	}
	// The killed member may have died before persisting its claim lines;
	// a takeover's line, on a later attempt, is always there.
	reclaimed := 0
	for _, c := range survivor.shardClaimLines(id) {
		if c.attempt > 0 {
			reclaimed++
			if c.instance == victim.id {
				t.Fatalf("shard %s was taken over by the killed member", c.shard)
			}
		}
	}
	if reclaimed == 0 {
		t.Fatal("no shard of the killed member was claimed again")
	}
	reclaims := 0.0
	for _, m := range members {
		if m != victim {
			reclaims += m.metric("faucet_cluster_reclaims_total", map[string]string{"kind": "shard"})
		}
	}
	if reclaims < 1 {
		t.Fatalf("the survivors counted %v shard reclaims, want at least 1", reclaims)
	}
	count, distinct, err := countKeys(sinkDB)
	if err != nil {
		t.Fatal(err)
	}
	if count != rows || distinct != rows {
		t.Fatalf("the sink holds %d rows with %d distinct keys, want %d of each", count, distinct, rows)
	}
}

func TestClusterRidesOutAPostgresRestart(t *testing.T) {
	ctx := context.Background()
	pg, err := testpg.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Close() })
	// The throwaway server commits asynchronously, so a crash loses the last
	// commits it acknowledged; an accepted run must survive one, so the
	// history commits durably, as it would on a production server.
	for _, stmt := range []string{"CREATE DATABASE history", "ALTER DATABASE history SET synchronous_commit = on"} {
		if err := execSQL(pg.URL(), stmt); err != nil {
			t.Fatal(err)
		}
	}
	hist := pg.DatabaseURL("history")
	members := startCluster(t, 2, hist, "--max-concurrent-runs", "2")
	dir := t.TempDir()

	// Submit runs throughout the restart; every accepted one must finish.
	var (
		mu       sync.Mutex
		accepted []string
		refused  int
	)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				m := members[w]
				cfg := holdFor(2, 200, filepath.Join(dir, fmt.Sprintf("w%d-%d.jsonl", w, i)))
				resp, err := m.admin().SubmitRunWithResponse(ctx, nil, client.SubmitRequest{Config: cfg})
				mu.Lock()
				switch {
				case err == nil && resp.JSON202 != nil:
					accepted = append(accepted, resp.JSON202.RunId)
				case err == nil && resp.StatusCode() == http.StatusServiceUnavailable:
					refused++
				case err == nil:
					t.Errorf("submit during the restart: %d %s", resp.StatusCode(), resp.Body)
				}
				mu.Unlock()
				time.Sleep(50 * time.Millisecond)
			}
		})
	}
	time.Sleep(time.Second)
	// An immediate shutdown: every connection breaks mid-conversation.
	if err := pg.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	t.Logf("%d runs accepted, %d submits refused with 503 while the database was down", len(accepted), refused)
	for _, m := range members {
		testwait.Until(t, time.Minute, func() error {
			if !m.ready().HistoryOk {
				return fmt.Errorf("member %s never became ready again\n%s", m.id, m.stderr.String())
			}
			return nil
		})
	}
	for _, id := range accepted {
		if rec := members[0].await(id, client.RunStatusCompleted); rec.RecordsWritten != 2 {
			t.Fatalf("run %s = %+v", id, rec)
		}
	}
}

func TestClusterRefusesAHistoryItCannotShare(t *testing.T) {
	serve := func(args ...string) (string, error) {
		all := append([]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--no-auth"}, args...)
		out, err := exec.Command(fastBin, all...).CombinedOutput()
		return string(out), err
	}
	if out, err := serve("--cluster", "--history", "memory"); err == nil || !strings.Contains(out, "members share") {
		t.Fatalf("--cluster on a memory history: %v\n%s", err, out)
	}
	// A SQLite file cluster members share is off limits to a server outside
	// the cluster, which would take the members' runs for its own orphans.
	hist := "sqlite:" + filepath.Join(t.TempDir(), "shared.db")
	startMember(t, hist)
	if out, err := serve("--history", hist); err == nil || !strings.Contains(out, "servers share a history only with --cluster") {
		t.Fatalf("a server outside the cluster on its file: %v\n%s", err, out)
	}
	// On Postgres, the membership rows tell the same, once the member has
	// written its own.
	pg := testpg.Database(t)
	startCluster(t, 1, pg)
	if out, err := serve("--history", pg); err == nil || !strings.Contains(out, "start this server with --cluster too") {
		t.Fatalf("a server outside the cluster on its database: %v\n%s", err, out)
	}
}
