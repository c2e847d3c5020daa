package e2e

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/internal/testpg"
	"github.com/faucet-dev/faucet/internal/testwait"
	"github.com/faucet-dev/faucet/openapi/client"
)

// leaderOf waits until exactly one of members says it leads, and returns it.
func leaderOf(t *testing.T, members []*member) *member {
	t.Helper()
	var leader *member
	testwait.Until(t, 2*time.Minute, func() error {
		var leaders []*member
		for _, m := range members {
			if m.metric("faucet_cluster_leader", nil) == 1 {
				leaders = append(leaders, m)
			}
		}
		if len(leaders) != 1 {
			return fmt.Errorf("%d of %d members lead, want 1", len(leaders), len(members))
		}
		leader = leaders[0]
		return nil
	})
	return leader
}

// TestClusterLeadershipSurvivesAKilledLeader: the sweeps run on one member,
// the leader. Killed with SIGKILL, it cannot resign; once its lease lapses
// a survivor leads and sweeps: it requeues the run the dead leader was
// executing, and a member executes it to the end.
func TestClusterLeadershipSurvivesAKilledLeader(t *testing.T) {
	t.Parallel()
	hist := testpg.Database(t)
	members := startCluster(t, 3, hist, "--max-concurrent-runs", "2")
	leader := leaderOf(t, members)
	dir := t.TempDir()
	const rows = 10
	// Six runs for six slots: each member, the leader too, executes two.
	var id string
	for i := range 6 {
		run := members[i%3].submit(client.SubmitRequest{Config: holdFor(rows, 3000, filepath.Join(dir, fmt.Sprintf("run-%d.jsonl", i)))}).RunId
		if claimedBy(t, members[0].server, run, 0) == leader.id {
			id = run
		}
	}
	if id == "" {
		t.Fatal("the leader claimed none of the runs its slots were free for")
	}
	leader.await(id, client.RunStatusRunning)
	leader.kill9()
	var survivors []*member
	for _, m := range members {
		if m != leader {
			survivors = append(survivors, m)
		}
	}
	next := leaderOf(t, survivors)
	rec := next.await(id, client.RunStatusCompleted)
	if rec.Attempt != 1 || rec.RecordsWritten != rows {
		t.Fatalf("the dead leader's run = %+v, want completed on its second attempt", rec)
	}
	if n := next.metric("faucet_cluster_reclaims_total", map[string]string{"kind": "run"}); n < 1 {
		t.Fatalf("the new leader counted %v reclaims, want the dead leader's run", n)
	}
	for _, m := range survivors {
		if m != next && m.metric("faucet_cluster_reclaims_total", nil) != 0 {
			t.Fatalf("member %s swept although it does not lead", m.id)
		}
	}
}

// TestClusterWakesAnIdleMember: on Postgres a submit to a member with no
// free slot wakes the others at once. The idle member polls once an hour
// and the busy one never frees its slot, so only the wake-up can start the
// run.
func TestClusterWakesAnIdleMember(t *testing.T) {
	t.Parallel()
	hist := testpg.Database(t)
	busy := startMember(t, hist, "--max-concurrent-runs", "1", "--cluster-poll-secs", "3600")
	dir := t.TempDir()
	hold := busy.submit(client.SubmitRequest{Config: holding(1, filepath.Join(dir, "hold.jsonl"))}).RunId
	if rec := busy.await(hold, client.RunStatusRunning); rec.Status != client.RunStatusRunning {
		t.Fatal(busy.stderr.String())
	}
	idle := startMember(t, hist, "--cluster-poll-secs", "3600")
	// The idle member's own first look for work is behind it once it has
	// heartbeated: from then on it claims only when woken.
	testwait.Until(t, time.Minute, func() error {
		if idle.ready().Cluster.Instances < 2 {
			return errors.New("the idle member never joined")
		}
		return nil
	})
	id := busy.submit(client.SubmitRequest{Config: generateToFile(10, filepath.Join(dir, "out.jsonl"))}).RunId
	if rec := busy.await(id, client.RunStatusCompleted); rec.RecordsWritten != 10 {
		t.Fatalf("woken run = %+v", rec)
	}
	if by := claimedBy(t, busy.server, id, 0); by != idle.id {
		t.Fatalf("the run was claimed by %s, want the idle member %s", by, idle.id)
	}
}
