package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/internal/testwait"
	"github.com/faucet-dev/faucet/server/execution"
	"github.com/faucet-dev/faucet/server/metrics"
	"github.com/faucet-dev/faucet/server/servicetest"
)

// brokenCatalog is a catalog database that hangs until released and then
// fails every write for good: the worst a recorder can meet.
type brokenCatalog struct {
	release chan struct{}
	calls   atomic.Int64
}

func (b *brokenCatalog) CatalogRecord(ctx context.Context, _ db.CatalogBatch) error {
	b.calls.Add(1)
	select {
	case <-b.release:
	case <-ctx.Done():
	}
	return &db.Error{Op: "catalog record", Transience: db.Permanent, Err: errors.New("injected: the catalog's database is gone")}
}

func (b *brokenCatalog) ShardLineages(context.Context, string) ([]json.RawMessage, error) {
	return nil, errors.New("injected: unreadable")
}

// TestACatalogThatHangsThenFailsLeavesRunsAlone wires the recorder to the
// executor's Finalized hook as faucet serve does, over a catalog database
// that hangs and then fails. Every run still reaches its terminal record,
// with its own counts, while the catalog write is hung; once the database
// fails, every run's record is counted failed.
func TestACatalogThatHangsThenFailsLeavesRunsAlone(t *testing.T) {
	broken := &brokenCatalog{release: make(chan struct{})}
	m := metrics.New()
	r := New(Config{Store: broken, Metrics: m, Budget: time.Minute})
	r.Start()
	st := servicetest.Start(t, servicetest.Options{Exec: execution.Config{
		Finalized: func(ctx context.Context, f execution.Final) { r.Record(ctx, &f.Record, f.Plan, f.Results) },
	}})
	const runs = 5
	ids := []string{st.Submit(t, "10").RunID}
	// The first run's record has the recorder hung in its write ...
	testwait.Until(t, 30*time.Second, func() error {
		if broken.calls.Load() == 0 {
			return errors.New("the recorder has not tried the catalog yet")
		}
		return nil
	})
	// ... while every run, the first and those after it, ends as it would
	// have without a catalog.
	for range runs - 1 {
		ids = append(ids, st.Submit(t, "10").RunID)
	}
	for _, id := range ids {
		rec := servicetest.Await(t, st.Store, id, db.StatusCompleted)
		if rec.RecordsWritten != 10 {
			t.Errorf("run %s wrote %d records, want 10", id, rec.RecordsWritten)
		}
	}
	close(broken.release)
	stopCtx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r.Stop(stopCtx)
	if got := testutil.ToFloat64(m.CatalogWrites.WithLabelValues("snapshot", "failed")); got != runs {
		t.Errorf("failed snapshot writes counted %v, want %d", got, runs)
	}
	if got := testutil.ToFloat64(m.CatalogWrites.WithLabelValues("snapshot", "ok")); got != 0 {
		t.Errorf("snapshot writes counted ok: %v", got)
	}
	for _, id := range ids {
		if rec := servicetest.Await(t, st.Store, id, db.StatusCompleted); rec.Error != nil {
			t.Errorf("run %s carries an error after the catalog failed: %s", id, *rec.Error)
		}
	}
}

// TestStopCutsOffAHungWrite: at shutdown, a catalog write that hangs is
// cancelled once Stop's deadline passes; Stop returns, and every record
// still unwritten is counted failed by then.
func TestStopCutsOffAHungWrite(t *testing.T) {
	broken := &brokenCatalog{release: make(chan struct{})}
	m := metrics.New()
	r := New(Config{Store: broken, Metrics: m, Budget: time.Hour})
	r.Start()
	for i := range 3 {
		r.Record(context.Background(), finished(fmt.Sprintf("r%d", i), "people"), planOf("pw"), nil)
	}
	testwait.Until(t, 30*time.Second, func() error {
		if broken.calls.Load() == 0 {
			return errors.New("the recorder has not tried the catalog yet")
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	r.Stop(ctx)
	if got := testutil.ToFloat64(m.CatalogWrites.WithLabelValues("snapshot", "failed")); got != 3 {
		t.Errorf("failed snapshot writes counted %v when Stop returned, want 3", got)
	}
}
