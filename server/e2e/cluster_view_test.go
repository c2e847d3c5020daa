package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/internal/testwait"
	"github.com/faucet-dev/faucet/openapi/client"
)

// GET /v1/cluster and GET /v1/runs/{id}/shards: what the console's cluster
// page shows, read from two members sharing a SQLite file.
func TestClusterOverviewAndShards(t *testing.T) {
	t.Parallel()
	hist := "sqlite:" + filepath.Join(t.TempDir(), "shared.db")
	ms := startCluster(t, 2, hist, "--max-concurrent-runs", "3")
	a, b := ms[0], ms[1]

	held := a.submit(client.SubmitRequest{Config: holding(3, filepath.Join(t.TempDir(), "held.jsonl")), Name: ptr("held")}).RunId
	rec := a.await(held, client.RunStatusRunning)
	var owner string
	testwait.Until(t, time.Minute, func() error {
		view := clusterView(t, b.server)
		if !view.Enabled || view.Instance == nil || *view.Instance != b.id || len(view.Members) != 2 {
			return fmt.Errorf("cluster view %+v: want enabled, instance %s and both members", view, b.id)
		}
		for _, m := range view.Members {
			if m.MaxConcurrent != 3 || m.Listen == "" || m.StartedAt.IsZero() || m.LastHeartbeat.Before(m.StartedAt) {
				return fmt.Errorf("member %+v: want 3 slots, its address and its heartbeat", m)
			}
			for _, w := range m.Work {
				if w.RunId == held {
					if w.ShardId != nil || deref(w.Name) != "held" {
						return fmt.Errorf("work %+v: want the whole run named held", w)
					}
					owner = m.InstanceId
				}
			}
		}
		if owner == "" {
			return fmt.Errorf("no member lists run %s (%s) in its work: %+v", held, rec.Status, view.Members)
		}
		return nil
	})

	const rows = 20000
	sharded := b.submit(client.SubmitRequest{Config: shardedGenerate(rows, 2, "{type: stdout, config: {}}")}).RunId
	if got := awaitSharded(t, a, sharded); got.RecordsWritten != rows {
		t.Fatalf("sharded run wrote %d records, want %d", got.RecordsWritten, rows)
	}
	shards := runShards(t, a.server, sharded)
	var sum int64
	for i, sh := range shards {
		if sh.ShardId != fmt.Sprintf("%05d", i) || sh.Status != client.ShardStatusCompleted || sh.Owner == nil || sh.FinishedAt == nil || sh.Error != nil {
			t.Fatalf("shard %d: %+v, want completed by a member", i, sh)
		}
		if *sh.Owner != a.id && *sh.Owner != b.id {
			t.Fatalf("shard %s owned by %s, not a member", sh.ShardId, *sh.Owner)
		}
		sum += sh.RecordsWritten
	}
	if len(shards) != 2 || sum != rows {
		t.Fatalf("%d shards wrote %d records, want 2 shards writing %d", len(shards), sum, rows)
	}
	if none := runShards(t, b.server, held); len(none) != 0 {
		t.Fatalf("an unsharded run lists shards %+v", none)
	}
	resp, err := a.admin().ListRunShardsWithResponse(context.Background(), "no-such-run")
	if err != nil || resp.StatusCode() != http.StatusNotFound {
		t.Fatalf("shards of an unknown run: %v %d %s, want 404", err, resp.StatusCode(), resp.Body)
	}

	// Outside a cluster there is nothing to list.
	solo := start(t, serverOpts{})
	if view := clusterView(t, solo); view.Enabled || view.Instance != nil || len(view.Members) != 0 {
		t.Fatalf("a server outside a cluster shows %+v", view)
	}
}

func clusterView(t *testing.T, s *server) client.ClusterOverview {
	t.Helper()
	resp, err := s.admin().GetClusterWithResponse(context.Background())
	if err != nil || resp.JSON200 == nil {
		t.Fatalf("GET /v1/cluster: %v %s", err, resp.Body)
	}
	return *resp.JSON200
}

func runShards(t *testing.T, s *server, id string) []client.ShardRecord {
	t.Helper()
	resp, err := s.admin().ListRunShardsWithResponse(context.Background(), id)
	if err != nil || resp.JSON200 == nil {
		t.Fatalf("GET /v1/runs/%s/shards: %v %s", id, err, resp.Body)
	}
	return resp.JSON200.Shards
}
