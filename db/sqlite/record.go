package sqlite

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/db/sqlite/internal/dbsqlc"
)

// Timestamps are stored as microseconds since the Unix epoch, the precision
// of Postgres' timestamptz, so both dialects read back the same instant.

func micros(t time.Time) int64 { return t.UnixMicro() }

func microsPtr(t *time.Time) *int64 {
	if t == nil {
		return nil
	}
	v := t.UnixMicro()
	return &v
}

func fromMicros(v int64) time.Time { return time.UnixMicro(v).UTC() }

func fromMicrosPtr(v *int64) *time.Time {
	if v == nil {
		return nil
	}
	t := fromMicros(*v)
	return &t
}

// jsonTime renders t the way encoding/json writes a time.Time, for statements
// that patch the stored record document.
func jsonTime(t time.Time) string { return t.Format(time.RFC3339Nano) }

// normalize returns a copy of rec with every timestamp in UTC at microsecond
// precision, so the record document and the columns hold the same instant.
func normalize(rec *db.RunRecord) db.RunRecord {
	out := *rec
	out.SubmittedAt = fromMicros(micros(rec.SubmittedAt))
	out.StartedAt = fromMicrosPtr(microsPtr(rec.StartedAt))
	out.FinishedAt = fromMicrosPtr(microsPtr(rec.FinishedAt))
	return out
}

// runColumns is a normalized record split into the columns it fills.
type runColumns struct {
	labels, record string
}

func encodeRun(rec *db.RunRecord) (runColumns, error) {
	labels := rec.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	lb, err := json.Marshal(labels)
	if err != nil {
		return runColumns{}, fmt.Errorf("encode run %s labels: %w", rec.RunID, err)
	}
	// MarshalJSON directly: json.Marshal would re-scan and compact its
	// already compact output.
	rb, err := rec.MarshalJSON()
	if err != nil {
		return runColumns{}, fmt.Errorf("encode run %s record: %w", rec.RunID, err)
	}
	return runColumns{labels: string(lb), record: string(rb)}, nil
}

// decodeRun rebuilds a run from its row: the record document first, then the
// columns on top, since they are authoritative for the fields they carry.
func decodeRun(row dbsqlc.FaucetRun) (db.RunRecord, error) {
	var rec db.RunRecord
	if err := json.Unmarshal([]byte(row.Record), &rec); err != nil {
		return db.RunRecord{}, fmt.Errorf("decode run %s record: %w", row.RunID, err)
	}
	rec.Labels = nil
	if err := json.Unmarshal([]byte(row.Labels), &rec.Labels); err != nil {
		return db.RunRecord{}, fmt.Errorf("decode run %s labels: %w", row.RunID, err)
	}
	rec.RunID = row.RunID
	rec.Name = row.Name
	rec.Status = db.RunStatus(row.Status)
	rec.SubmittedAt = fromMicros(row.SubmittedAt)
	rec.StartedAt = fromMicrosPtr(row.StartedAt)
	rec.FinishedAt = fromMicrosPtr(row.FinishedAt)
	rec.IdempotencyKey = row.IdempotencyKey
	rec.Attempt = int(row.Attempt)
	rec.RecordsWritten = row.RecordsWritten
	rec.Error = row.Error
	return rec, nil
}

func decodeRuns(rows []dbsqlc.FaucetRun) ([]db.RunRecord, error) {
	out := make([]db.RunRecord, len(rows))
	for i, row := range rows {
		rec, err := decodeRun(row)
		if err != nil {
			return nil, err
		}
		out[i] = rec
	}
	return out, nil
}
