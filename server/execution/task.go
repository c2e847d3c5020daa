package execution

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/internal/redact"
	"github.com/faucet-dev/faucet/server/runlog"
)

// Task is a run, or one shard of a run, this process holds: queued or
// executing, from the moment it is dispatched or adopted until it ended.
type Task struct {
	runID string
	// shard is the shard executed, nil for a whole run.
	shard *db.ClaimedShard
	// owned: the task was claimed from the cluster, so its writes are
	// fenced on this member still owning it, and a peer may take it over.
	owned bool
	log   *runlog.Run
	// red masks the secrets of the task's plan, once it is known.
	red atomic.Pointer[redact.Redactor]
	// timeoutSecs is the run's timeout_secs, which never changes.
	timeoutSecs *int64
	// records is the count the sinks acknowledged so far.
	records atomic.Int64

	cancel, lost         chan struct{}
	cancelOnce, lostOnce sync.Once
	// slot: the task holds an execution slot; released: it is no longer
	// held; ending: its end began.
	slot, released, ending atomic.Bool
	// held: the executor holds the task (under its lock).
	held bool
	// startedAt is when a local run started executing here.
	startedAt atomic.Pointer[time.Time]

	// endMu is held by whoever ends the task (finalize, hand back) and by
	// the start write; ended says it ended, and rec is the record it ends
	// from.
	endMu      sync.Mutex
	ended      bool
	rec        *db.RunRecord
	startTimer *time.Timer
}

func (e *Executor) newTask(rec *db.RunRecord, owned bool, shard *db.ClaimedShard, log *runlog.Run, red *redact.Redactor) *Task {
	t := &Task{
		runID: rec.RunID, shard: shard, owned: owned, log: log, rec: rec, timeoutSecs: rec.TimeoutSecs,
		cancel: make(chan struct{}), lost: make(chan struct{}),
	}
	t.red.Store(red)
	return t
}

// RunID is the run the task executes (or executes a shard of).
func (t *Task) RunID() string { return t.runID }

// ShardID is the shard the task executes; "" for a whole run.
func (t *Task) ShardID() string {
	if t.shard == nil {
		return ""
	}
	return t.shard.ShardID
}

// Records is what the task's sinks acknowledged so far.
func (t *Task) Records() int64 { return t.records.Load() }

// Log is the task's log capture.
func (t *Task) Log() *runlog.Run { return t.log }

// SetRedactor replaces the task's redactor once its plan, and so its
// secrets, are known.
func (t *Task) SetRedactor(red *redact.Redactor) { t.red.Store(red) }

// redactor is the task's redactor now.
func (t *Task) redactor() *redact.Redactor { return t.red.Load() }

// requestCancel asks the task to stop as cancelled.
func (t *Task) requestCancel() { t.cancelOnce.Do(func() { close(t.cancel) }) }

// CancelRequested reports whether a cancel of the task was requested.
func (t *Task) CancelRequested() bool {
	select {
	case <-t.cancel:
		return true
	default:
		return false
	}
}

// Lose tells the task that this member no longer owns it (a peer took it
// over after its lease lapsed): it stops, and writes no result.
func (t *Task) Lose() { t.lostOnce.Do(func() { close(t.lost) }) }

// start records that a local run started executing.
func (t *Task) start(at time.Time) {
	t.endMu.Lock()
	defer t.endMu.Unlock()
	running := *t.rec
	running.Status = db.StatusRunning
	running.StartedAt = &at
	t.rec = &running
	t.startedAt.Store(&at)
}

// running returns when a local run started, while it executes here.
func (t *Task) running() (time.Time, bool) {
	at := t.startedAt.Load()
	if at == nil || t.ending.Load() {
		return time.Time{}, false
	}
	return *at, true
}
