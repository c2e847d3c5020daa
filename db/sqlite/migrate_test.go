package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"

	migrations "github.com/faucet-dev/faucet/sql"
)

// signalStore closes checked once goose has looked up whether version is
// applied, which it does before it starts the transaction that applies it.
type signalStore struct {
	database.Store
	version int64
	once    sync.Once
	checked chan struct{}
}

func (s *signalStore) GetMigration(ctx context.Context, db database.DBTxConn, version int64) (*database.GetMigrationResult, error) {
	res, err := s.Store.GetMigration(ctx, db, version)
	if version == s.version {
		s.once.Do(func() { close(s.checked) })
	}
	return res, err
}

// Two processes find the same migration pending; the second applies it only
// after the first committed it. With a migration whose statements repeat
// without error, only the fenced version store stops the second application:
// its transaction is rolled back, effects included.
func TestFencedStoreRollsBackASecondApplication(t *testing.T) {
	ctx := t.Context()
	target, err := resolve(filepath.Join(t.TempDir(), "history.db"))
	if err != nil {
		t.Fatal(err)
	}
	connA, err := target.pool(ctx, 1, setupWriter)
	if err != nil {
		t.Fatal(err)
	}
	defer connA.Close()
	connB, err := target.pool(ctx, 1, setupWriter)
	if err != nil {
		t.Fatal(err)
	}
	defer connB.Close()

	aInTx, bChecked := make(chan struct{}), make(chan struct{})
	var runs atomic.Int32
	repeatable := func() *goose.Migration {
		return goose.NewGoMigration(1000,
			&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
				if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS side_effects (n INTEGER)`); err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO side_effects VALUES (1)`); err != nil {
					return err
				}
				// The first application holds its transaction open until the
				// other process has found version 1000 not applied yet.
				if runs.Add(1) == 1 {
					close(aInTx)
					select {
					case <-bChecked:
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				return nil
			}},
			&goose.GoFunc{RunTx: func(context.Context, *sql.Tx) error { return nil }})
	}

	pA, err := provider(connA, goose.WithGoMigrations(repeatable()))
	if err != nil {
		t.Fatal(err)
	}
	base, err := database.NewStore(database.DialectSQLite3, goose.DefaultTablename)
	if err != nil {
		t.Fatal(err)
	}
	pB, err := goose.NewProvider(goose.DialectCustom, connB, migrations.SQLite,
		goose.WithStore(&signalStore{Store: fencedStore{base}, version: 1000, checked: bChecked}), goose.WithGoMigrations(repeatable()))
	if err != nil {
		t.Fatal(err)
	}
	newestSQL := int64(0)
	for _, s := range pA.ListSources() {
		if s.Type == goose.TypeSQL {
			newestSQL = max(newestSQL, s.Version)
		}
	}
	if _, err := pA.UpTo(ctx, newestSQL); err != nil {
		t.Fatal(err)
	}

	errA := make(chan error, 1)
	go func() {
		_, err := pA.ApplyVersion(ctx, 1000, true)
		errA <- err
	}()
	<-aInTx
	_, errB := pB.ApplyVersion(ctx, 1000, true)
	if err := <-errA; err != nil {
		t.Fatalf("first application: %v", err)
	}
	if !errors.Is(errB, errAlreadyApplied) {
		t.Fatalf("second application: %v, want errAlreadyApplied", errB)
	}

	var effects, versions int
	if err := connA.QueryRowContext(ctx, `SELECT count(*) FROM side_effects`).Scan(&effects); err != nil {
		t.Fatal(err)
	}
	if err := connA.QueryRowContext(ctx, `SELECT count(*) FROM goose_db_version WHERE version_id = 1000`).Scan(&versions); err != nil {
		t.Fatal(err)
	}
	if effects != 1 || versions != 1 {
		t.Fatalf("migration effects %d, recorded %d times; want 1 and 1", effects, versions)
	}
	if v, err := pB.GetDBVersion(ctx); err != nil || v != 1000 {
		t.Fatalf("version after both: %d, %v", v, err)
	}
}
