// Package sqlite is faucet's embedded run-history store: the db.Driver of a
// SQLite file through ncruces/go-sqlite3 (pure Go, no cgo), running the
// queries sqlc compiles from sql/sqlite, beneath db.NewStore. Importing it
// registers the "sqlite" dialect.
//
// Concurrency: the file is opened in WAL mode with two pools, one writer
// connection that carries every write (transactions begin IMMEDIATE, so
// writers queue on the busy timeout instead of deadlocking) and a read pool
// whose connections are query-only. Concurrent writes share transactions
// (group commit, see batcher); each still commits or fails on its own, and
// a call returns only once its write is committed. Durability is WAL with
// synchronous=NORMAL: a commit survives a crash of faucet, and the last
// commits before a power loss may be lost. Several processes may share one
// file: each claim is a single UPDATE … RETURNING statement, so SQLite's
// write lock makes it exclusive across them.
package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"github.com/ncruces/go-sqlite3"
	sqlite3driver "github.com/ncruces/go-sqlite3/driver"
	"github.com/ncruces/go-sqlite3/vfs/memdb"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/database"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/sqlite/internal/dbsqlc"
	migrations "github.com/faucet-dev/faucet/sql"
)

// dialectName is the name the dialect registers under and Dialect reports.
const dialectName = "sqlite"

// busyTimeout is how long a connection waits for another connection's (or
// process's) lock before a statement fails with SQLITE_BUSY.
const busyTimeout = 10 * time.Second

// readConns bounds the read pool. Readers never block each other in WAL mode;
// a handful covers the API's concurrent reads without holding many SQLite
// instances in memory.
const readConns = 4

func init() {
	db.Register(db.Dialect{Name: dialectName, Open: Open, Migrator: Migrator})
}

// Open opens the SQLite history at dsn (a file path, or db.MemoryDSN for a
// private in-memory database), migrates it up and returns the Store. A
// database migrated by a newer faucet is refused with db.ErrSchemaTooNew
// before anything is changed.
func Open(ctx context.Context, dsn string, opts db.Options) (db.Store, error) {
	target, err := resolve(dsn)
	if err != nil {
		return nil, err
	}
	if err := migrate(ctx, target); err != nil {
		target.release()
		return nil, err
	}
	d, err := connect(ctx, target)
	if err != nil {
		target.release()
		return nil, err
	}
	return db.NewStore(d, opts), nil
}

// Migrator returns a goose provider over the embedded SQLite migrations
// connected to dsn, for `faucet migrate`. Closing the returned Closer closes
// the connection.
func Migrator(ctx context.Context, dsn string, opts ...goose.ProviderOption) (*goose.Provider, io.Closer, error) {
	target, err := resolve(dsn)
	if err != nil {
		return nil, nil, err
	}
	conn, err := target.pool(ctx, 1, setupWriter)
	if err != nil {
		target.release()
		return nil, nil, err
	}
	p, err := provider(conn, opts...)
	if err != nil {
		_ = conn.Close()
		target.release()
		return nil, nil, permanent("migrate "+target.path, err)
	}
	return p, closerFunc(func() error {
		err := conn.Close()
		target.release()
		return err
	}), nil
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// target is a resolved SQLite database: the name handed to the driver, and
// for an in-memory database the shared memdb it lives in.
type target struct {
	// path is the file path as the user gave it, for error messages.
	path string
	// name is what the driver opens.
	name string
	// memory is the memdb database name, empty for a file.
	memory string
}

// resolve checks dsn and prepares what Open needs: a memory database is
// created in memdb (so the writer and the read pool share it), a file path is
// checked for a usable directory so a typo gets a clear error instead of
// SQLite's generic "unable to open database file".
func resolve(dsn string) (*target, error) {
	if dsn == db.MemoryDSN {
		name := "faucet-memory-" + rand.Text()
		memdb.Create(name, nil)
		return &target{
			path:   "memory",
			name:   (&url.URL{Scheme: "file", OmitHost: true, Path: "/" + name, RawQuery: "vfs=memdb"}).String(),
			memory: name,
		}, nil
	}
	if dsn == "" {
		return nil, permanent("open", fmt.Errorf("%w: empty SQLite path", db.ErrBadURL))
	}
	op := "open " + dsn
	dir := filepath.Dir(dsn)
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, permanent(op, fmt.Errorf("directory %s does not exist", dir))
	case err != nil:
		return nil, permanent(op, err)
	case !info.IsDir():
		return nil, permanent(op, fmt.Errorf("%s is not a directory", dir))
	}
	if info, err := os.Stat(dsn); err == nil && info.IsDir() {
		return nil, permanent(op, errors.New("it is a directory, not a SQLite file"))
	}
	return &target{path: dsn, name: dsn}, nil
}

// release frees the memory database, if any; a file is left alone.
func (t *target) release() {
	if t.memory != "" {
		memdb.Delete(t.memory)
	}
}

// pool opens a *sql.DB of at most n connections to t, each set up by setup.
func (t *target) pool(ctx context.Context, n int, setup func(*sqlite3.Conn, bool) error) (*sql.DB, error) {
	memory := t.memory != ""
	pool, err := sqlite3driver.Open(t.name, func(c *sqlite3.Conn) error { return setup(c, memory) })
	if err != nil {
		return nil, t.openError(err)
	}
	pool.SetMaxOpenConns(n)
	pool.SetMaxIdleConns(n)
	pool.SetConnMaxLifetime(0)
	pool.SetConnMaxIdleTime(0)
	if err := pool.PingContext(ctx); err != nil {
		_ = pool.Close()
		return nil, t.openError(err)
	}
	return pool, nil
}

// openError names the file and says what to check, keeping SQLite's typed
// error (and its verdict) underneath.
func (t *target) openError(err error) error {
	switch {
	case errors.Is(err, sqlite3.CANTOPEN):
		err = fmt.Errorf("%w (check that the file and its directory are writable)", err)
	case errors.Is(err, sqlite3.READONLY), errors.Is(err, sqlite3.PERM):
		err = fmt.Errorf("%w (the file or its directory is read-only)", err)
	case errors.Is(err, sqlite3.NOTADB):
		err = fmt.Errorf("%w (the file is not a SQLite database)", err)
	}
	return wrap(context.Background(), "open "+t.path, err)
}

// setupWriter configures a read-write connection. busy_timeout comes first so
// that switching a fresh file to WAL waits for a concurrent opener instead of
// failing. WAL is persistent in the file; a memdb database cannot use it (it
// has no shared-memory index) and keeps its rollback journal in memory.
func setupWriter(c *sqlite3.Conn, memory bool) error {
	if err := c.BusyTimeout(busyTimeout); err != nil {
		return err
	}
	if !memory {
		if err := c.Exec(`PRAGMA journal_mode = WAL`); err != nil {
			return err
		}
		// Checkpoints run in the background (see checkpointer), not in
		// whichever commit happens to grow the WAL.
		if err := c.Exec(fmt.Sprintf(`PRAGMA wal_autocheckpoint = 0; PRAGMA journal_size_limit = %d`, walSizeLimit)); err != nil {
			return err
		}
	}
	return c.Exec(`PRAGMA foreign_keys = ON; PRAGMA synchronous = NORMAL`)
}

// setupReader configures a read-pool connection: query-only, so a write that
// strays onto the read pool fails loudly instead of bypassing the writer.
func setupReader(c *sqlite3.Conn, memory bool) error {
	if err := c.BusyTimeout(busyTimeout); err != nil {
		return err
	}
	return c.Exec(`PRAGMA foreign_keys = ON; PRAGMA query_only = ON`)
}

// migrate brings t's schema up to the newest embedded migration. Processes
// opening one database at the same moment may both find a migration pending:
// each migration runs in an IMMEDIATE transaction, so they apply it one after
// the other, and the second one's transaction is rolled back (see
// fencedStore). The loser sees the schema version move on and simply retries,
// finding less or nothing left to do.
func migrate(ctx context.Context, t *target) error {
	conn, err := t.pool(ctx, 1, setupWriter)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	op := "migrate " + t.path
	p, err := provider(conn)
	if err != nil {
		return permanent(op, err)
	}
	for {
		before, err := p.GetDBVersion(ctx)
		if err != nil {
			return wrap(ctx, op, err)
		}
		_, err = db.MigrateUp(ctx, p)
		if err == nil {
			return nil
		}
		if errors.Is(err, db.ErrSchemaTooNew) {
			return permanent(op, err)
		}
		after, verr := p.GetDBVersion(ctx)
		if verr != nil || after <= before {
			return wrap(ctx, op, err)
		}
	}
}

// provider is a goose provider over the embedded migrations on conn.
func provider(conn *sql.DB, opts ...goose.ProviderOption) (*goose.Provider, error) {
	store, err := database.NewStore(database.DialectSQLite3, goose.DefaultTablename)
	if err != nil {
		return nil, fmt.Errorf("sqlite migrations: %w", err)
	}
	opts = append([]goose.ProviderOption{goose.WithStore(fencedStore{store})}, opts...)
	p, err := goose.NewProvider(goose.DialectCustom, conn, migrations.SQLite, opts...)
	if err != nil {
		return nil, fmt.Errorf("sqlite migrations: %w", err)
	}
	return p, nil
}

// errAlreadyApplied rolls back a migration another process applied first.
var errAlreadyApplied = errors.New("migration was applied concurrently by another process")

// fencedStore is goose's SQLite version store with one change: recording an
// applied version first checks, inside the migration's own transaction, that
// no one recorded it already. A migration applied twice by racing processes
// (possible for one whose statements happen to be repeatable) thus fails
// and rolls back instead of running its effects a second time.
type fencedStore struct{ database.Store }

func (s fencedStore) Insert(ctx context.Context, tx database.DBTxConn, req database.InsertRequest) error {
	m, err := s.GetMigration(ctx, tx, req.Version)
	switch {
	case err == nil && m.IsApplied:
		return fmt.Errorf("version %d: %w", req.Version, errAlreadyApplied)
	case err != nil && !errors.Is(err, database.ErrVersionNotFound):
		return err
	}
	return s.Store.Insert(ctx, tx, req)
}

// connect opens the writer and the read pool of a migrated database.
func connect(ctx context.Context, t *target) (*driver, error) {
	w, err := t.pool(ctx, 1, setupWriter)
	if err != nil {
		return nil, err
	}
	r, err := t.pool(ctx, readConns, setupReader)
	if err != nil {
		_ = w.Close()
		return nil, err
	}
	ckpt, err := startCheckpointer(ctx, t, defaultCheckpoints)
	if err != nil {
		_ = w.Close()
		_ = r.Close()
		return nil, err
	}
	wc, rc := newStmtCache(w), newStmtCache(r)
	return &driver{
		w:       w,
		r:       r,
		wc:      wc,
		rc:      rc,
		rq:      dbsqlc.New(rc),
		batches: newBatcher(w, wc),
		ckpt:    ckpt,
		target:  t,
	}, nil
}
