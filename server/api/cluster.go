package api

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/server/auth"
)

// The cluster's members and the shards of a run: what the console's cluster
// page shows. Both go beyond the reference API, which has no such routes.
func registerCluster(g groups, d *Deps) {
	huma.Register(g.v1, huma.Operation{
		OperationID: "getCluster", Method: http.MethodGet, Path: "/cluster",
		Summary: "List the cluster's members and what they execute", Tags: []string{"cluster"},
		Description: "The live members of the cluster this server belongs to (those whose heartbeat is within the " +
			"lease TTL), each with its execution slots and the runs and shards it executes, as the shared history " +
			"records them. Outside cluster mode, enabled is false and members is empty.",
		Errors:   []int{503},
		Metadata: map[string]any{metaRole: auth.Viewer},
	}, d.getCluster)

	huma.Register(g.v1, huma.Operation{
		OperationID: "listRunShards", Method: http.MethodGet, Path: "/runs/{id}/shards",
		Summary: "List a sharded run's shards", Tags: []string{"cluster"},
		Description: "Each source shard of a run that was split into shards (shard: {count: N}), " +
			"ordered by shard id, with its state and the member (or, outside a cluster, the server) executing it. " +
			"Empty for a run that was not sharded.",
		Errors:   []int{404, 503},
		Metadata: map[string]any{metaRole: auth.Viewer},
	}, d.listRunShards)
}

// ClusterOverview is the body of GET /v1/cluster.
type ClusterOverview struct {
	Enabled  bool            `json:"enabled" doc:"false when this server runs outside a cluster."`
	Instance string          `json:"instance,omitempty" doc:"This server's instance id; empty outside a cluster."`
	Members  []ClusterMember `json:"members" doc:"Live members, ordered by instance id."`
}

// ClusterMember is one live member of the cluster.
type ClusterMember struct {
	InstanceID    string       `json:"instance_id"`
	Listen        string       `json:"listen" doc:"The address the member serves its API on, as it reported it."`
	StartedAt     time.Time    `json:"started_at"`
	LastHeartbeat time.Time    `json:"last_heartbeat"`
	MaxConcurrent int          `json:"max_concurrent" doc:"The member's execution slots."`
	InFlight      int          `json:"in_flight" doc:"Slots in use at its last heartbeat."`
	Work          []MemberWork `json:"work" doc:"The runs and shards the member executes, ordered by run id and shard id."`
}

// MemberWork is one run, or one shard of a run, a member executes.
type MemberWork struct {
	RunID   string  `json:"run_id"`
	Name    *string `json:"name" nullable:"true" doc:"The run's name."`
	ShardID string  `json:"shard_id,omitempty" doc:"The shard, when the member executes one shard of a sharded run."`
}

// ShardList is the body of GET /v1/runs/{id}/shards.
type ShardList struct {
	Shards []ShardRecord `json:"shards"`
}

// ShardRecord is one source shard of a sharded run.
type ShardRecord struct {
	ShardID        string      `json:"shard_id"`
	Status         ShardStatus `json:"status"`
	Owner          *string     `json:"owner" nullable:"true" doc:"The member executing it, or the last one that did; null before a member claimed it."`
	Attempt        int         `json:"attempt" doc:"Takeovers of the shard after its owner's lease lapsed, from 0."`
	RecordsWritten int64       `json:"records_written"`
	SizeEstimate   *int64      `json:"size_estimate" nullable:"true" doc:"The source's estimate of the shard's size, when it gave one."`
	Error          *string     `json:"error" nullable:"true"`
	FinishedAt     *time.Time  `json:"finished_at" nullable:"true"`
}

type clusterOutput struct {
	Body ClusterOverview
}

func (d *Deps) getCluster(ctx context.Context, _ *struct{}) (*clusterOutput, error) {
	out := &clusterOutput{Body: ClusterOverview{Members: []ClusterMember{}}}
	if d.Cluster == nil {
		return out, nil
	}
	out.Body.Enabled = true
	out.Body.Instance = d.Store.InstanceID()
	live, err := d.Cluster.Members(ctx)
	if err != nil {
		return nil, d.serviceError(err)
	}
	work, err := d.Store.InstanceWorkList(ctx)
	if err != nil {
		return nil, d.serviceError(err)
	}
	byOwner := map[string][]MemberWork{}
	for _, w := range work {
		byOwner[w.Owner] = append(byOwner[w.Owner], MemberWork{RunID: w.RunID, Name: w.Name, ShardID: w.ShardID})
	}
	for _, m := range live {
		mw := byOwner[m.InstanceID]
		if mw == nil {
			mw = []MemberWork{}
		}
		out.Body.Members = append(out.Body.Members, ClusterMember{
			InstanceID: m.InstanceID, Listen: m.Listen, StartedAt: m.StartedAt, LastHeartbeat: m.LastHeartbeat,
			MaxConcurrent: m.MaxConcurrent, InFlight: m.InFlight, Work: mw,
		})
	}
	return out, nil
}

type shardsOutput struct {
	Body ShardList
}

func (d *Deps) listRunShards(ctx context.Context, in *runIDInput) (*shardsOutput, error) {
	if _, err := d.Runs.Get(ctx, in.ID); err != nil {
		return nil, d.serviceError(err)
	}
	shards, err := d.Store.ShardList(ctx, in.ID)
	if err != nil {
		return nil, d.serviceError(err)
	}
	out := &shardsOutput{Body: ShardList{Shards: make([]ShardRecord, len(shards))}}
	for i, s := range shards {
		out.Body.Shards[i] = toShardRecord(s)
	}
	return out, nil
}

func toShardRecord(s db.ShardRecord) ShardRecord {
	return ShardRecord{
		ShardID: s.ShardID, Status: ShardStatus(s.Status), Owner: s.Owner, Attempt: s.Attempt, RecordsWritten: s.RecordsWritten,
		SizeEstimate: s.SizeEstimate, Error: s.Error, FinishedAt: s.FinishedAt,
	}
}
