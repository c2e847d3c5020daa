// Package postgres keeps faucet's run history in PostgreSQL, for teams and
// for cluster mode, where several instances share one database. Every query
// is compiled by sqlc from sql/postgres/queries; every fence is a WHERE
// clause or a row lock, so instances on different machines stay correct.
//
// Importing the package registers the "postgres" dialect with db.Open.
package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/postgres/internal/dbsqlc"
	migrations "github.com/faucet-dev/faucet/sql"
)

// Name is the dialect name history URLs with a postgres:// or postgresql://
// scheme resolve to.
const Name = "postgres"

func init() {
	db.Register(db.Dialect{Name: Name, Open: Open, Migrator: Migrator})
}

// Open connects to the database at dsn (a postgres:// URL; pool settings such
// as pool_max_conns are accepted), migrates it to the newest schema and
// returns the store. See db.Open for retries and the in-memory fallback.
func Open(ctx context.Context, dsn string, opts db.Options) (db.Store, error) {
	opts = opts.WithDefaults()
	pool, err := connect(ctx, dsn, opts.ConnectBudget)
	if err != nil {
		return nil, err
	}
	if err := migrate(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	return db.NewStore(&driver{pool: pool, q: dbsqlc.New(pool)}, opts), nil
}

// Migrator returns a goose provider over the embedded migrations, connected
// to dsn, for faucet migrate. Closing the Closer releases the connections.
func Migrator(ctx context.Context, dsn string, opts ...goose.ProviderOption) (*goose.Provider, io.Closer, error) {
	pool, err := connect(ctx, dsn, db.DefaultConnectBudget)
	if err != nil {
		return nil, nil, err
	}
	p, sqlDB, err := provider(pool, opts...)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return p, closerFunc(func() error {
		err := sqlDB.Close()
		pool.Close()
		return err
	}), nil
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// connect opens a pool and proves it reaches the server. Each dial is bounded
// by connectTimeout unless the URL sets connect_timeout, so an unroutable host
// cannot stall start-up past the connect budget.
func connect(ctx context.Context, dsn string, connectTimeout time.Duration) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", db.ErrBadURL, err)
	}
	// Timestamps the database renders as text are then in UTC, like the
	// ones faucet writes.
	cfg.ConnConfig.RuntimeParams["timezone"] = "UTC"
	if cfg.ConnConfig.RuntimeParams["application_name"] == "" {
		cfg.ConnConfig.RuntimeParams["application_name"] = "faucet"
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = connectTimeout
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fail("connect", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fail("connect", err)
	}
	return pool, nil
}

// provider builds a goose provider over pool. A session advisory lock
// serialises instances that start at once against a fresh database.
func provider(pool *pgxpool.Pool, opts ...goose.ProviderOption) (*goose.Provider, *sql.DB, error) {
	locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 300))
	if err != nil {
		return nil, nil, fmt.Errorf("migration lock: %w", err)
	}
	sqlDB := stdlib.OpenDBFromPool(pool)
	p, err := goose.NewProvider(goose.DialectPostgres, sqlDB, migrations.Postgres,
		append([]goose.ProviderOption{goose.WithSessionLocker(locker)}, opts...)...)
	if err != nil {
		_ = sqlDB.Close()
		return nil, nil, fmt.Errorf("migrations: %w", err)
	}
	return p, sqlDB, nil
}

// migrate brings the schema up to date, refusing a newer one first.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	p, sqlDB, err := provider(pool)
	if err != nil {
		return fail("migrate", err)
	}
	defer sqlDB.Close()
	if _, err := db.MigrateUp(ctx, p); err != nil {
		return fail("migrate", err)
	}
	return nil
}
