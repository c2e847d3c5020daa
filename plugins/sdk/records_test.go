package sdk

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	connectorv1 "github.com/faucet-dev/faucet/plugins/proto/faucet/connector/v1"
)

// transactional is a target that keeps nothing of a write it fails, and
// refuses the records in bad; named says whether its errors name the
// failing record.
type transactional struct {
	bad    map[int]bool
	named  bool
	rows   []int
	writes int
}

func (t *transactional) write(_ context.Context, part Batch) error {
	t.writes++
	var ids []int
	i := 0
	for rec := range part.All() {
		var id int
		fmt.Sscanf(string(rec), `{"id":%d}`, &id)
		if t.bad[id] {
			idx := -1
			if t.named {
				idx = i
			}
			return &RecordError{Index: idx, Err: fmt.Errorf("record %d violates a constraint", id)}
		}
		ids = append(ids, id)
		i++
	}
	t.rows = append(t.rows, ids...)
	return nil
}

func batchOf(seq uint64, n int) Batch {
	var b []byte
	for i := range n {
		b = fmt.Appendf(b, "{\"id\":%d}\n", i)
	}
	return Batch{Seq: seq, Count: n, Records: b}
}

func isolated(t *testing.T, named bool, attempts int) {
	t.Helper()
	r := &rejects{policy: RecordPolicy{MaxAttempts: attempts}}
	ctx := context.WithValue(context.Background(), rejectsKey{}, r)
	target := &transactional{bad: map[int]bool{137: true, 138: true, 900: true}, named: named}
	if err := Isolate(ctx, batchOf(7, 1000), target.write); err != nil {
		t.Fatal(err)
	}
	var want []int
	for i := range 1000 {
		if !target.bad[i] {
			want = append(want, i)
		}
	}
	slices.Sort(target.rows)
	if !slices.Equal(target.rows, want) {
		t.Fatalf("wrote %d records, want the %d good ones once each", len(target.rows), len(want))
	}
	var got []string
	_ = r.flush(func(m *connectorv1.WriteResponse) error {
		for _, rec := range m.GetRejected().GetRecords() {
			if m.GetRejected().GetSeq() != 7 || int(rec.GetAttempts()) != attempts {
				t.Errorf("rejected %+v of batch %d", rec, m.GetRejected().GetSeq())
			}
			got = append(got, fmt.Sprintf("%d:%s", rec.GetIndex(), rec.GetRecord()))
		}
		return nil
	})
	if want := []string{`137:{"id":137}`, `138:{"id":138}`, `900:{"id":900}`}; !slices.Equal(got, want) {
		t.Fatalf("rejected %v, want %v", got, want)
	}
	// Split, not replayed one by one: a few dozen writes for 1000 records.
	if target.writes > 60 {
		t.Fatalf("%d writes for 1000 records with 3 bad ones", target.writes)
	}
	t.Logf("%d writes", target.writes)
}

func TestIsolateSplitsAtTheNamedRecord(t *testing.T) { isolated(t, true, 3) }

func TestIsolateBisectsWhenNoRecordIsNamed(t *testing.T) { isolated(t, false, 2) }

func TestIsolatePassesOtherErrors(t *testing.T) {
	r := &rejects{policy: RecordPolicy{MaxAttempts: 2}}
	ctx := context.WithValue(context.Background(), rejectsKey{}, r)
	broken := errors.New("connection lost")
	calls := 0
	err := Isolate(ctx, batchOf(1, 10), func(context.Context, Batch) error {
		calls++
		if calls == 1 {
			return &RecordError{Index: 3, Err: errors.New("bad")}
		}
		return broken
	})
	if !errors.Is(err, broken) || r.count() != 0 {
		t.Fatalf("err = %v, %d rejected; want the connection's error and nothing rejected", err, r.count())
	}
	// Without a policy, a record's error is the session's.
	if err := Isolate(context.Background(), batchOf(1, 10), func(context.Context, Batch) error { return &RecordError{Index: 0, Err: broken} }); !errors.Is(err, broken) {
		t.Fatalf("without a policy: %v", err)
	}
}
