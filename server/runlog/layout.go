package runlog

import (
	"fmt"

	"github.com/faucet-dev/faucet/db"
)

// The log seq layout. A run's lines are numbered by seq, and its execution
// may be logged in parts by different members at once: a cluster run's later
// attempts, and each attempt of each of its shards. Each part numbers its
// lines in a block of seqs of its own, so parts never collide, the per-run
// cap counts within a part (one part's lines never push out another's), and
// lines read back grouped by part, in the order the parts are laid out:
//
//	seq = (shard+1)<<shardShift | attempt<<attemptShift | n
//
// with shard+1 = 0 for the whole run, and n the line's number within its
// part, from 1. This package alone computes seqs; the store only applies the
// cap over the range a part hands it (db.LogCap).
const (
	attemptShift = 32
	shardShift   = 40
	// maxAttempt is the last attempt with a block of its own; later
	// attempts share it (their lines may then collide with each other's).
	maxAttempt = 1<<(shardShift-attemptShift) - 1
)

// Part names one independently logged part of a run's execution.
type Part struct {
	// Shard is the index of the shard the part executes; -1 for the whole
	// run.
	Shard int64
	// Attempt is how many times the run (or the shard) changed hands
	// before this part.
	Attempt int
}

// WholeRun is the part of a run executed whole at attempt.
func WholeRun(attempt int) Part { return Part{Shard: -1, Attempt: attempt} }

// ShardPart is the part of a run's shard (its id, as the cluster names
// shards: the index in decimal) executed at attempt.
func ShardPart(shardID string, attempt int) (Part, error) {
	var index int64
	if _, err := fmt.Sscanf(shardID, "%d", &index); err != nil || index < 0 {
		return Part{}, fmt.Errorf("shard id %q is not a shard index", shardID)
	}
	return Part{Shard: index, Attempt: attempt}, nil
}

// base is the seq below the part's first line.
func (p Part) base() int64 {
	b := int64(min(p.Attempt, maxAttempt)) << attemptShift
	if p.Shard >= 0 {
		b |= (p.Shard + 1) << shardShift
	}
	return b
}

// limit is the cap of keep lines over the part's block; keep <= 0 keeps
// every line.
func (p Part) limit(keep int) db.LogCap {
	if keep <= 0 {
		return db.LogCap{}
	}
	b := p.base()
	return db.LogCap{Keep: keep, From: b, To: b + 1<<attemptShift}
}
