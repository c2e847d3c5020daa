package sdk

import (
	"bytes"
	"context"
	"errors"
	"sync"

	connectorv1 "github.com/faucet-dev/faucet/plugins/proto/faucet/connector/v1"
)

// RecordPolicy is how a write session treats a single bad record when faucet
// gives it one (the pipeline has a dead-letter queue or a poison policy): a
// sink whose Spec says RejectsRecords refuses the record with Reject instead
// of failing the session, and writes the rest of its batch as usual.
type RecordPolicy struct {
	// MaxAttempts counts the tries of a record on its own before it is
	// rejected; at least 1.
	MaxAttempts int
}

// RecordPolicyFrom returns the record policy of the write session ctx
// belongs to; false when it has none, and a bad record fails the session.
func RecordPolicyFrom(ctx context.Context) (RecordPolicy, bool) {
	r, ok := ctx.Value(rejectsKey{}).(*rejects)
	if !ok {
		return RecordPolicy{}, false
	}
	return r.policy, true
}

// WithRecordPolicy returns ctx carrying p as faucet gives a write session
// its record policy, with reject called for every record the sink refuses,
// for testing a sink without faucet.
func WithRecordPolicy(ctx context.Context, p RecordPolicy, reject func(seq uint64, index int, record []byte, attempts int, err error)) context.Context {
	return context.WithValue(ctx, rejectsKey{}, &rejects{policy: p, each: reject})
}

// Reject reports that the session refused the index-th record (from 0) of
// batch seq, after attempts tries on its own, because of err. faucet
// dead-letters, drops or fails on it as the pipeline's poison policy says;
// the record is not written. record must hold the record as the sink got it
// (it is copied). Outside a session with a record policy it does nothing.
func Reject(ctx context.Context, seq uint64, index int, record []byte, attempts int, err error) {
	r, ok := ctx.Value(rejectsKey{}).(*rejects)
	if !ok {
		return
	}
	rec := bytes.Clone(bytes.TrimRight(record, "\n"))
	if r.each != nil {
		r.each(seq, index, rec, attempts, err)
	}
	r.add(seq, &connectorv1.RejectedRecord{Index: uint32(index), Record: rec, Error: err.Error(), Attempts: uint32(attempts)})
}

// RecordError is an error caused by the records a sink was given rather
// than by the sink: a constraint they violate, a value a column cannot
// hold. Index is the position of the failing record in what was written,
// -1 when the target does not say which.
type RecordError struct {
	Index int
	Err   error
}

func (e *RecordError) Error() string { return e.Err.Error() }
func (e *RecordError) Unwrap() error { return e.Err }

// Isolate writes batch b, in a session with a record policy, through write,
// which must keep nothing of a part it fails (a savepoint rolled back). When
// write fails with a *RecordError, the part is split around the record it
// names, or in halves when it names none, and each piece is written again:
// the good records keep their batching, a failed part is never replayed one
// record at a time from its start, and a lone record that keeps failing is
// retried up to the policy's attempts and then rejected. Another error ends
// Isolate, as it would end the session without a policy. Without a policy in
// ctx, Isolate is write(ctx, b).
func Isolate(ctx context.Context, b Batch, write func(ctx context.Context, part Batch) error) error {
	if _, ok := RecordPolicyFrom(ctx); !ok {
		return write(ctx, b)
	}
	starts := recordStarts(b.Records)
	return IsolateFunc(ctx, len(starts)-1,
		func(ctx context.Context, first, n int) error {
			return write(ctx, Batch{Seq: b.Seq, Count: n, Records: b.Records[starts[first]:starts[first+n]]})
		},
		func(i, attempts int, err error) {
			Reject(ctx, b.Seq, i, b.Records[starts[i]:starts[i+1]], attempts, err)
		})
}

// IsolateFunc is Isolate over n records a sink addresses by position, for a
// sink that judges records late, once it holds several batches: write(ctx,
// first, count) writes records [first, first+count) and keeps nothing of
// them when it fails, and reject(i, attempts, err) refuses record i (with
// Reject, naming its batch). The first write covers all n records; a sink
// that knows its outcome already may answer it without writing again.
func IsolateFunc(ctx context.Context, n int, write func(ctx context.Context, first, count int) error, reject func(i, attempts int, err error)) error {
	attempts := 1
	if p, ok := RecordPolicyFrom(ctx); ok {
		attempts = max(1, p.MaxAttempts)
	}
	iso := isolation{ctx: ctx, write: write, reject: reject, attempts: attempts}
	return iso.part(0, n)
}

// recordStarts returns the offset of every record of a JSON Lines buffer,
// and its length last.
func recordStarts(records []byte) []int {
	starts := []int{0}
	for i := 0; i < len(records); {
		j := bytes.IndexByte(records[i:], '\n')
		if j < 0 {
			break
		}
		i += j + 1
		starts = append(starts, i)
	}
	if starts[len(starts)-1] != len(records) {
		starts = append(starts, len(records))
	}
	return starts
}

type isolation struct {
	ctx      context.Context
	write    func(ctx context.Context, first, count int) error
	reject   func(i, attempts int, err error)
	attempts int
}

// part writes records [first, first+n).
func (s *isolation) part(first, n int) error {
	if n == 0 {
		return nil
	}
	err := s.write(s.ctx, first, n)
	var re *RecordError
	if err == nil || !errors.As(err, &re) {
		return err
	}
	if n == 1 {
		tries := 1
		for ; tries < s.attempts; tries++ {
			if err = s.write(s.ctx, first, 1); err == nil {
				return nil
			}
			if !errors.As(err, &re) {
				return err
			}
		}
		s.reject(first, tries, err)
		return nil
	}
	if i := re.Index; i >= 0 && i < n {
		// The target went through the records before the one it named.
		if err := s.part(first, i); err != nil {
			return err
		}
		if err := s.part(first+i, 1); err != nil {
			return err
		}
		return s.part(first+i+1, n-i-1)
	}
	half := n / 2
	if err := s.part(first, half); err != nil {
		return err
	}
	return s.part(first+half, n-half)
}

type rejectsKey struct{}

// rejects collects what a session refused until the SDK sends it.
type rejects struct {
	policy RecordPolicy
	// each, when set, is told of every refusal too (WithRecordPolicy).
	each    func(seq uint64, index int, record []byte, attempts int, err error)
	mu      sync.Mutex
	pending []*connectorv1.Rejected
	total   int64
}

// withRejects gives a session faucet's record policy, when the open request
// carries one and the connector honours it.
func withRejects(ctx context.Context, spec Spec, rp *connectorv1.RecordPolicy) (context.Context, *rejects) {
	if rp == nil || !spec.RejectsRecords {
		return ctx, nil
	}
	r := &rejects{policy: RecordPolicy{MaxAttempts: max(1, int(rp.GetMaxAttempts()))}}
	return context.WithValue(ctx, rejectsKey{}, r), r
}

func (r *rejects) add(seq uint64, rec *connectorv1.RejectedRecord) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.total++
	if n := len(r.pending); n > 0 && r.pending[n-1].GetSeq() == seq {
		r.pending[n-1].Records = append(r.pending[n-1].Records, rec)
		return
	}
	r.pending = append(r.pending, &connectorv1.Rejected{Seq: seq, Records: []*connectorv1.RejectedRecord{rec}})
}

// flush sends what was refused since the last flush; a nil r has nothing.
func (r *rejects) flush(send func(*connectorv1.WriteResponse) error) error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	pending := r.pending
	r.pending = nil
	r.mu.Unlock()
	for _, p := range pending {
		if err := send(&connectorv1.WriteResponse{Msg: &connectorv1.WriteResponse_Rejected{Rejected: p}}); err != nil {
			return err
		}
	}
	return nil
}

// count is how many records the session refused.
func (r *rejects) count() int64 {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}
