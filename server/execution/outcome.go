package execution

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/internal/redact"
	"github.com/faucet-dev/faucet/pipeline"
)

// Terminal reasons, the `reason` label of faucet_runs_finished_total.
const (
	ReasonOK        = "ok"
	ReasonError     = "error"
	ReasonCancelled = "cancelled"
	ReasonTimeout   = "timeout"
	ReasonShutdown  = "server_shutdown"
	// ReasonLost ends an execution whose lease this member lost: another
	// member owns the run (or the shard) now, so nothing is written.
	ReasonLost = "lost"
)

// MsgShutdown is the error of a run a shutdown ended.
const MsgShutdown = "server shutdown before the run finished"

// Outcome is how an execution ended.
type Outcome struct {
	Status      db.RunStatus
	Reason      string
	Err         *string
	Records     int64
	Invocations []db.InvocationRecord
	// plan and results are what the run executed and the engine's results
	// of it, for Config.Finalized; nil for a run that never executed.
	plan    *pipeline.Plan
	results []pipeline.InvocationResult
}

// Failed is the outcome of a run that failed for reason with msg.
func Failed(reason, msg string) Outcome {
	return Outcome{Status: db.StatusFailed, Reason: reason, Err: &msg}
}

// Cancelled is the outcome of a run cancelled with records written.
func Cancelled(records int64) Outcome {
	return Outcome{Status: db.StatusCancelled, Reason: ReasonCancelled, Records: records}
}

// cancelled reports whether the engine stopped because it was cancelled.
func cancelled(err error, res []pipeline.InvocationResult) bool {
	if errors.Is(err, context.Canceled) {
		return true
	}
	for _, inv := range res {
		if errors.Is(inv.Err, context.Canceled) {
			return true
		}
	}
	return false
}

// classify turns the engine's results into an outcome. Error texts are
// redacted here, before they reach the record or any response.
func classify(res []pipeline.InvocationResult, err error, red *redact.Redactor) Outcome {
	o := Outcome{Status: db.StatusCompleted, Reason: ReasonOK, Invocations: make([]db.InvocationRecord, 0, len(res)), results: res}
	var failures []string
	for _, inv := range res {
		ir := db.InvocationRecord{
			RowID: inv.RowID, RecordsWritten: inv.RecordsWritten, DurationMS: inv.Duration.Milliseconds(),
			RecordsDeadLettered: inv.RecordsDeadLettered, RecordsDropped: inv.RecordsDropped,
		}
		if inv.Err != nil {
			msg := red.String(inv.Err.Error())
			ir.Error = &msg
			failures = append(failures, inv.RowID+": "+msg)
		}
		o.Records += inv.RecordsWritten
		o.Invocations = append(o.Invocations, ir)
	}
	switch {
	case err != nil:
		msg := red.String(err.Error())
		o.Status, o.Reason, o.Err = db.StatusFailed, ReasonError, &msg
	case len(failures) > 0:
		msg := fmt.Sprintf("%d of %d invocation(s) failed: %s", len(failures), len(res), strings.Join(failures, "; "))
		o.Status, o.Reason, o.Err = db.StatusFailed, ReasonError, &msg
	}
	return o
}
