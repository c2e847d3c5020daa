package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"

	"github.com/ncruces/go-sqlite3"
	sqlite3driver "github.com/ncruces/go-sqlite3/driver"

	"github.com/faucet-dev/faucet/db"
)

// The verdicts come from errors the driver really returns, provoked on a
// real file, and from the typed codes it returns bare.
func TestWrapClassifiesByResultCode(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "x.db")
	impatient := func(c *sqlite3.Conn) error { return c.BusyTimeout(0) }

	holder, err := sqlite3driver.Open(path, impatient)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if _, err := holder.ExecContext(ctx, `CREATE TABLE t (k INTEGER PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	if _, err := holder.ExecContext(ctx, `INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	duplicate := func() error { _, err := holder.ExecContext(ctx, `INSERT INTO t VALUES (1)`); return err }()

	// One connection holds the write lock; another asking for it without a
	// busy timeout gets SQLITE_BUSY.
	tx, err := holder.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	other, err := sqlite3driver.Open(path, impatient)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	busy := func() error {
		otx, err := other.BeginTx(ctx, nil)
		if err == nil {
			_ = otx.Rollback()
		}
		return err
	}()

	cancelled, cancel := context.WithCancel(ctx)
	cancel()

	cases := []struct {
		name string
		ctx  context.Context
		err  error
		want db.Transience
		is   error
	}{
		{"busy from the driver", ctx, busy, db.Transient, sqlite3.BUSY},
		{"constraint from the driver", ctx, duplicate, db.Permanent, sqlite3.CONSTRAINT},
		{"bare busy code", ctx, sqlite3.BUSY_SNAPSHOT, db.Transient, sqlite3.BUSY},
		{"bare locked code", ctx, sqlite3.LOCKED_SHAREDCACHE, db.Transient, sqlite3.LOCKED},
		{"bare other code", ctx, sqlite3.CORRUPT, db.Permanent, sqlite3.CORRUPT},
		{"no code", ctx, sql.ErrConnDone, db.Unknown, sql.ErrConnDone},
		{"caller cancelled", cancelled, sqlite3.INTERRUPT, db.Unknown, context.Canceled},
		{"no rows", ctx, sql.ErrNoRows, db.Permanent, db.ErrNotFound},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.err == nil {
				t.Fatal("the driver returned no error to classify")
			}
			got := wrap(c.ctx, "op", c.err)
			var e *db.Error
			if !errors.As(got, &e) || e.Op != "op" {
				t.Fatalf("wrap returned %v (%T), want a *db.Error for op", got, got)
			}
			if v := db.TransienceOf(got); v != c.want {
				t.Errorf("verdict %v, want %v", v, c.want)
			}
			if !errors.Is(got, c.is) {
				t.Errorf("%v does not wrap %v", got, c.is)
			}
		})
	}
	if wrap(ctx, "op", nil) != nil {
		t.Error("wrap(nil) is not nil")
	}
}
