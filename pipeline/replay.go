package pipeline

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
)

// Replay says what a replay of dead letters feeds through a config's sink.
type Replay struct {
	// From is the dead-letter file, or a glob naming several.
	From string
	// Reason keeps only the dead letters with this reason; "" keeps all.
	Reason string
	// Row is the matrix row whose sink (and vars) the replay writes with;
	// "" the first one, when the config has a matrix.
	Row string
	// FailedDLQ is where a record the sink refuses again goes; never From.
	FailedDLQ string
}

// DeadLetterSource is the connector that reads dead letters back.
const DeadLetterSource = "dlq"

// ReplayConfig rewrites a pipeline config into the config of a replay of
// r.From: its source becomes the dead letters' records (connector dlq), its
// matrix the one row r.Row, and its dead-letter file r.FailedDLQ, with the
// poison action dlq, so a record that fails again lands there and never
// back in the file it came from. The result is JSON, and is loaded and
// checked like any submitted config.
func ReplayConfig(config []byte, format Format, r Replay) ([]byte, error) {
	doc, cerr := parseDocument(config, format)
	if cerr != nil {
		return nil, cerr
	}
	root, ok := doc.tree.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("a config is an object with version and pipeline, not a %s", jsonKind(doc.tree))
	}
	if sameFile(r.From, r.FailedDLQ) {
		return nil, fmt.Errorf("failed_dlq %s is the file being replayed: records that fail again would land back in it", r.FailedDLQ)
	}
	pipe, ok := root["pipeline"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the config has no pipeline to replay through")
	}
	source := map[string]any{"path": r.From}
	if r.Reason != "" {
		source["reason"] = r.Reason
	}
	pipe["source"] = map[string]any{"type": DeadLetterSource, "config": source}
	if matrix, ok := root["matrix"].([]any); ok && len(matrix) > 0 {
		row, err := replayRow(matrix, r.Row)
		if err != nil {
			return nil, err
		}
		// The row's sink and vars stay; its source is the dead letters'.
		delete(row, "source")
		root["matrix"] = []any{row}
	} else if r.Row != "" && r.Row != DefaultRowID {
		return nil, fmt.Errorf("row %q: the config has no matrix", r.Row)
	}
	res, _ := root["resilience"].(map[string]any)
	if res == nil {
		res = map[string]any{}
	}
	res["dlq"] = map[string]any{"path": r.FailedDLQ}
	if poison, ok := res["poison"].(map[string]any); ok {
		poison["action"] = string(PoisonDLQ)
	}
	root["resilience"] = res
	// A replay is one pass over the file.
	delete(root, "shard")
	return json.Marshal(root)
}

// replayRow picks the matrix row to replay through: the one with id row, or
// the first.
func replayRow(matrix []any, id string) (map[string]any, error) {
	var ids []string
	for _, item := range matrix {
		m, _ := item.(map[string]any)
		rid, _ := m["id"].(string)
		if id == "" || rid == id {
			return m, nil
		}
		ids = append(ids, rid)
	}
	return nil, fmt.Errorf("row %q is not in the config's matrix (rows: %s)", id, strings.Join(ids, ", "))
}

// DefaultFailedDLQ is where the records a replay of from fails again go by
// default, beside it: x.jsonl replays into x.replay-failed.jsonl, a glob
// into replay-failed.jsonl in its directory (the Rust faucet's names).
func DefaultFailedDLQ(from string) string {
	dir, base := filepath.Split(from)
	if strings.ContainsAny(base, `*?[\`) {
		return filepath.Join(dir, "replay-failed.jsonl")
	}
	return filepath.Join(dir, strings.TrimSuffix(base, filepath.Ext(base))+".replay-failed.jsonl")
}

// sameFile reports whether two paths name one file lexically.
func sameFile(a, b string) bool {
	return filepath.Clean(a) == filepath.Clean(b)
}
