package dbtest

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/pressly/goose/v3"

	"github.com/faucet-dev/faucet/db"
)

// migrator opens the dialect's goose provider on url.
func migrator(t testing.TB, url string, opts ...goose.ProviderOption) *goose.Provider {
	t.Helper()
	name, dsn, err := db.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	d, err := db.LookupDialect(name)
	if err != nil {
		t.Fatal(err)
	}
	p, closer, err := d.Migrator(t.Context(), dsn, opts...)
	if err != nil {
		t.Fatalf("migrator: %v", err)
	}
	t.Cleanup(func() { _ = closer.Close() })
	return p
}

func exerciseMigrations(t *testing.T, newURL func(t testing.TB) string) {
	t.Run("UpDownUp", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		p := migrator(t, url)
		newest := db.NewestVersion(p)
		if newest < 1 {
			t.Fatalf("no embedded migrations (newest version %d)", newest)
		}
		if _, err := db.MigrateUp(t.Context(), p); err != nil {
			t.Fatalf("up: %v", err)
		}
		assertVersion(t, p, newest)
		if _, err := p.DownTo(t.Context(), 0); err != nil {
			t.Fatalf("down to 0: %v", err)
		}
		assertVersion(t, p, 0)
		if _, err := db.MigrateUp(t.Context(), p); err != nil {
			t.Fatalf("up again: %v", err)
		}
		assertVersion(t, p, newest)

		s := open(t, url, db.Options{InstanceID: "a"})
		submit(t, s, newRun("r1", db.StatusQueued, now()))
		wantStatus(t, s, "r1", db.StatusQueued)
	})

	t.Run("OpenMigratesAndIsIdempotent", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		open(t, url, db.Options{InstanceID: "a"})
		open(t, url, db.Options{InstanceID: "b"})
		p := migrator(t, url)
		assertVersion(t, p, db.NewestVersion(p))
		has, err := p.HasPending(t.Context())
		if err != nil || has {
			t.Fatalf("pending migrations after Open: %v, %v", has, err)
		}
	})

	t.Run("ConcurrentOpen", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		errs := make(chan error, 4)
		for range 4 {
			go func() {
				s, err := db.Open(t.Context(), url, db.Options{})
				if err == nil {
					err = s.Close()
				}
				errs <- err
			}()
		}
		for range 4 {
			if err := <-errs; err != nil {
				t.Fatalf("concurrent open: %v", err)
			}
		}
	})

	t.Run("FailedMigrationLeavesNothingBehind", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		open(t, url, db.Options{InstanceID: "a"})
		newest := db.NewestVersion(migrator(t, url))
		create := func(fail bool) *goose.Migration {
			up := func(ctx context.Context, tx *sql.Tx) error {
				if _, err := tx.ExecContext(ctx, "CREATE TABLE faucet_half_migrated (id integer)"); err != nil {
					return err
				}
				if fail {
					return errors.New("migration fails after its first statement")
				}
				return nil
			}
			down := func(ctx context.Context, tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, "DROP TABLE faucet_half_migrated")
				return err
			}
			return goose.NewGoMigration(newest+1, &goose.GoFunc{RunTx: up}, &goose.GoFunc{RunTx: down})
		}
		if _, err := db.MigrateUp(t.Context(), migrator(t, url, goose.WithGoMigrations(create(true)))); err == nil {
			t.Fatal("a failing migration succeeded")
		}
		assertVersion(t, migrator(t, url), newest)
		// Had the failed migration left its table behind, this would fail.
		p := migrator(t, url, goose.WithGoMigrations(create(false)))
		if _, err := db.MigrateUp(t.Context(), p); err != nil {
			t.Fatalf("the same migration, succeeding: %v", err)
		}
		assertVersion(t, p, newest+1)
		if _, err := p.DownTo(t.Context(), newest); err != nil {
			t.Fatal(err)
		}
		s := open(t, url, db.Options{InstanceID: "a"})
		submit(t, s, newRun("r1", db.StatusQueued, now()))
	})

	t.Run("RefusesNewerSchema", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		open(t, url, db.Options{InstanceID: "a"})
		newest := db.NewestVersion(migrator(t, url))

		// A migration from the future, applied by "a newer faucet".
		future := goose.NewGoMigration(newest+1000,
			&goose.GoFunc{RunTx: func(context.Context, *sql.Tx) error { return nil }},
			&goose.GoFunc{RunTx: func(context.Context, *sql.Tx) error { return nil }})
		p := migrator(t, url, goose.WithGoMigrations(future))
		if _, err := p.Up(t.Context()); err != nil {
			t.Fatalf("apply future migration: %v", err)
		}

		_, err := db.Open(t.Context(), url, db.Options{})
		if !errors.Is(err, db.ErrSchemaTooNew) {
			t.Fatalf("Open on a newer schema: %v, want ErrSchemaTooNew", err)
		}
		_, err = db.MigrateUp(t.Context(), migrator(t, url))
		if !errors.Is(err, db.ErrSchemaTooNew) {
			t.Fatalf("MigrateUp on a newer schema: %v, want ErrSchemaTooNew", err)
		}
		// Nothing was changed: the future version is still the newest.
		assertVersion(t, migrator(t, url), newest+1000)
	})
}

func assertVersion(t testing.TB, p *goose.Provider, want int64) {
	t.Helper()
	got, err := p.GetDBVersion(t.Context())
	if err != nil {
		t.Fatalf("schema version: %v", err)
	}
	if got != want {
		t.Fatalf("schema version %d, want %d", got, want)
	}
}
