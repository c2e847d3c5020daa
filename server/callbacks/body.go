package callbacks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"github.com/faucet-dev/faucet/db"
)

// maxErrorBytes bounds the run's error in a body: an error can be long (a
// connector's whole report), and the body's size is bounded.
const maxErrorBytes = 8 << 10

// body is what a delivery sends: the terminal run's facts, which never
// change once it is terminal, so every attempt from every member sends the
// same bytes, plus the delivery's id (signed with the rest, so a receiver
// that dedupes on it cannot be fooled by a replay under another id) and the
// callback's extra fields.
func body(deliveryID string, run *db.RunRecord, extra map[string]any) ([]byte, error) {
	doc := make(map[string]any, len(extra)+len(ReservedBodyKeys))
	for k, v := range extra {
		doc[k] = v
	}
	var runErr *string
	if run.Error != nil {
		e := *run.Error
		if len(e) > maxErrorBytes {
			e = truncate(e, maxErrorBytes) + "…"
		}
		runErr = &e
	}
	labels := run.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range map[string]any{
		"event":           "run." + string(run.Status),
		"delivery_id":     deliveryID,
		"run_id":          run.RunID,
		"status":          run.Status,
		"name":            run.Name,
		"labels":          labels,
		"submitted_at":    run.SubmittedAt.UTC().Format(time.RFC3339Nano),
		"started_at":      timeText(run.StartedAt),
		"finished_at":     timeText(run.FinishedAt),
		"elapsed_secs":    run.ElapsedSecs,
		"records_written": run.RecordsWritten,
		"error":           runErr,
		"attempt":         run.Attempt,
	} {
		doc[k] = v
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encode the callback body of run %s: %w", run.RunID, err)
	}
	return b, nil
}

func timeText(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := t.UTC().Format(time.RFC3339Nano)
	return &s
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

// SignatureHeader carries the body's HMAC when the server has a callback
// secret.
const SignatureHeader = "Faucet-Signature"

// Sign is the Faucet-Signature of body under secret: "sha256=" and the hex
// HMAC-SHA256 of the exact body bytes. A receiver computes the same over
// the raw body it read and compares in constant time.
func Sign(secret, body []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}
