package tabular

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/faucet-dev/faucet/plugins/sdk"
)

// KeyRange is the shard descriptor of the SQL sources: the rows whose key is
// above After (when set) and at most Through (when set). The first shard
// also takes the rows whose key is NULL, so the shards together hold every
// row exactly once; a range with neither bound reads the whole source.
type KeyRange struct {
	After   json.RawMessage `json:"after,omitempty"`
	Through json.RawMessage `json:"through,omitempty"`
	Nulls   bool            `json:"nulls,omitempty"`
}

// RangeShards turns sorted, distinct boundary keys into shards: bounds[i] is
// the last key of shard i, and the shard after the last bound is open ended.
// estimates[i] sizes shard i (len(bounds)+1 of them).
func RangeShards(bounds []json.RawMessage, estimates []int64) ([]sdk.Shard, error) {
	if len(bounds) == 0 {
		return []sdk.Shard{{Descriptor: json.RawMessage(`{}`), EstimatedRecords: sum(estimates)}}, nil
	}
	shards := make([]sdk.Shard, 0, len(bounds)+1)
	for i := 0; i <= len(bounds); i++ {
		r := KeyRange{Nulls: i == 0}
		if i > 0 {
			r.After = bounds[i-1]
		}
		if i < len(bounds) {
			r.Through = bounds[i]
		}
		desc, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("encode shard: %w", err)
		}
		var est int64
		if i < len(estimates) {
			est = estimates[i]
		}
		shards = append(shards, sdk.Shard{Descriptor: desc, EstimatedRecords: est})
	}
	return shards, nil
}

func sum(xs []int64) int64 {
	var t int64
	for _, x := range xs {
		t += x
	}
	return t
}

// DecodeRange reads a shard descriptor; a nil shard is the whole source.
func DecodeRange(shard *sdk.Shard) (KeyRange, error) {
	var r KeyRange
	if shard == nil || len(shard.Descriptor) == 0 {
		return r, nil
	}
	if err := json.Unmarshal(shard.Descriptor, &r); err != nil {
		return r, fmt.Errorf("decode shard descriptor: %w", err)
	}
	return r, nil
}

// Where renders the range as a condition on column col (already quoted),
// with placeholder(n) naming the nth argument (1-based), and returns the
// bound values converted by arg. An unbounded range renders as "".
func (r KeyRange) Where(col string, placeholder func(n int) string, arg func(json.RawMessage) (any, error)) (string, []any, error) {
	var conds []string
	var args []any
	for _, b := range []struct {
		op  string
		val json.RawMessage
	}{{">", r.After}, {"<=", r.Through}} {
		if len(b.val) == 0 {
			continue
		}
		v, err := arg(b.val)
		if err != nil {
			return "", nil, fmt.Errorf("shard bound %s: %w", b.val, err)
		}
		args = append(args, v)
		conds = append(conds, fmt.Sprintf("%s %s %s", col, b.op, placeholder(len(args))))
	}
	if len(conds) == 0 {
		return "", nil, nil
	}
	cond := strings.Join(conds, " AND ")
	if r.Nulls {
		cond = fmt.Sprintf("(%s IS NULL OR (%s))", col, cond)
	}
	return cond, args, nil
}

// BoundValue converts a JSON shard bound to the Go value a database driver
// binds: an integer, a float, a string or a boolean.
func BoundValue(raw json.RawMessage) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if n, ok := v.(json.Number); ok {
		if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return i, nil
		}
		return n.Float64()
	}
	switch v.(type) {
	case string, bool:
		return v, nil
	}
	return nil, fmt.Errorf("unsupported key value %s", raw)
}
