package db

import (
	"context"
	"fmt"

	"github.com/pressly/goose/v3"
)

// MigrateUp applies every pending migration of p, after refusing with
// ErrSchemaTooNew a database that a newer faucet already migrated past the
// newest migration p knows: running older code against a newer schema could
// corrupt data it does not understand. Each migration runs in its own
// transaction, so a failure leaves the schema at the last complete version.
func MigrateUp(ctx context.Context, p *goose.Provider) ([]*goose.MigrationResult, error) {
	if err := CheckSchemaVersion(ctx, p); err != nil {
		return nil, err
	}
	res, err := p.Up(ctx)
	if err != nil {
		return res, fmt.Errorf("migrate up: %w", err)
	}
	return res, nil
}

// CheckSchemaVersion returns ErrSchemaTooNew when the database's schema
// version is newer than the newest migration p knows.
func CheckSchemaVersion(ctx context.Context, p *goose.Provider) error {
	current, err := p.GetDBVersion(ctx)
	if err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if known := NewestVersion(p); current > known {
		return fmt.Errorf("%w: database is at version %d, this binary knows up to %d; upgrade faucet", ErrSchemaTooNew, current, known)
	}
	return nil
}

// NewestVersion is the highest migration version p knows.
func NewestVersion(p *goose.Provider) int64 {
	var v int64
	for _, s := range p.ListSources() {
		v = max(v, s.Version)
	}
	return v
}
