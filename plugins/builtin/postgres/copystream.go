package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"

	"github.com/jackc/pgx/v5/pgconn"
)

// copyStream is one COPY … FROM STDIN that lasts as long as consecutive
// batches list the same columns. The writer encodes a batch into a free
// buffer and queues it; pgconn's CopyFrom reads the queue in another
// goroutine and sends it on. So the server ingests one batch while the
// next is parsed and encoded, where a COPY per batch made them take turns.
//
// Queued batches are acknowledged before the server has seen them. That is
// safe because the session is one transaction: the server's verdict on a
// batch arrives at the latest when Close ends the COPY, and a failure then
// rolls back every batch, acknowledged or not, and fails the session, so a
// commit holds exactly the acknowledged batches or none of them.
type copyStream struct {
	// columns identifies the column list the COPY was started with.
	columns string
	queue   chan []byte
	free    chan []byte
	abort   chan struct{}
	done    chan struct{}
	// err is CopyFrom's outcome, set before done is closed.
	err error

	// Read's state, owned by CopyFrom's goroutine.
	cur, held []byte

	// spans maps the COPY's input lines to the batches that sent them, so
	// a rejected row is reported by batch and record.
	spans []span
	lines int
}

// span is a batch's place in the COPY input: its first line (from 1).
type span struct {
	seq   uint64
	first int
}

// copyBuffers is how many batch buffers a stream cycles through: one being
// encoded while the other is on its way to the server.
const copyBuffers = 2

func startCopy(ctx context.Context, conn *pgconn.PgConn, sql, columns string) *copyStream {
	s := &copyStream{
		columns: columns,
		queue:   make(chan []byte, 1),
		free:    make(chan []byte, copyBuffers),
		abort:   make(chan struct{}),
		done:    make(chan struct{}),
	}
	for range copyBuffers {
		s.free <- nil
	}
	go func() {
		defer close(s.done)
		_, s.err = conn.CopyFrom(ctx, s, sql)
	}()
	return s
}

// buffer returns an empty buffer to encode the next batch into, waiting
// while every buffer is on its way.
func (s *copyStream) buffer() ([]byte, error) {
	select {
	case b := <-s.free:
		return b[:0], nil
	case <-s.done:
		return nil, s.failure()
	}
}

// send queues a batch's encoded rows, rows lines of them.
func (s *copyStream) send(seq uint64, rows int, b []byte) error {
	select {
	case s.queue <- b:
		s.spans = append(s.spans, span{seq: seq, first: s.lines + 1})
		s.lines += rows
		return nil
	case <-s.done:
		return s.failure()
	}
}

// errAborted ends a COPY whose session is being discarded.
var errAborted = errors.New("write session aborted")

// Read feeds CopyFrom the queued batches, handing each buffer back once it
// has been read whole.
func (s *copyStream) Read(p []byte) (int, error) {
	for len(s.cur) == 0 {
		if s.held != nil {
			s.free <- s.held
			s.held = nil
		}
		select {
		case b, ok := <-s.queue:
			if !ok {
				return 0, io.EOF
			}
			s.cur, s.held = b, b
		case <-s.abort:
			return 0, errAborted
		}
	}
	n := copy(p, s.cur)
	s.cur = s.cur[n:]
	return n, nil
}

// finish ends the COPY after the queued batches and returns its outcome.
func (s *copyStream) finish() error {
	close(s.queue)
	<-s.done
	if s.err != nil {
		return s.failure()
	}
	return nil
}

// cancel ends the COPY with a failure, so the server discards its rows.
func (s *copyStream) cancel() {
	close(s.abort)
	<-s.done
}

// copyLine finds the input line in the context of a COPY error
// ("COPY t, line 12, column id: …").
var copyLine = regexp.MustCompile(`^COPY [^,]+, line (\d+)`)

// failure is the stream's error, naming the batch and record the server
// rejected when it says which line that was. Call it once done is closed.
func (s *copyStream) failure() error {
	var pgErr *pgconn.PgError
	if !errors.As(s.err, &pgErr) {
		return s.err
	}
	m := copyLine.FindStringSubmatch(pgErr.Where)
	if m == nil {
		return s.err
	}
	line, _ := strconv.Atoi(m[1])
	i := sort.Search(len(s.spans), func(i int) bool { return s.spans[i].first > line }) - 1
	if i < 0 {
		return s.err
	}
	return fmt.Errorf("batch %d, record %d: %w", s.spans[i].seq, line-s.spans[i].first+1, s.err)
}
