package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/pipeline"
)

// TestLiveStatusLine checks what a terminal receives: the progress line is
// redrawn in place, a log line first erases it, and the end erases it too.
func TestLiveStatusLine(t *testing.T) {
	var out bytes.Buffer
	s := &status{out: &out, live: true, start: time.Now().Add(-2 * time.Second)}
	s.progress(pipeline.Progress{Records: 1500})
	redraw := func() {
		s.mu.Lock()
		s.draw()
		s.mu.Unlock()
	}
	redraw()
	if got := out.String(); !strings.HasPrefix(got, "\r\033[K1,500 rows, ") || !strings.Contains(got, "rows/s") || strings.Contains(got, "\n") {
		t.Fatalf("live line %q: want it drawn in place, without a newline", got)
	}
	out.Reset()
	if _, err := s.Write([]byte("level=WARN msg=slow\n")); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "\r\033[Klevel=WARN msg=slow\n" {
		t.Errorf("a log line during progress wrote %q; want the live line erased first", got)
	}
	out.Reset()
	s.progress(pipeline.Progress{Records: 3000})
	redraw()
	s.stopped = make(chan struct{})
	s.end()
	if got := out.String(); !strings.HasPrefix(got, "\r\033[K3,000 rows, ") || !strings.HasSuffix(got, "\r\033[K") {
		t.Errorf("redraw and end wrote %q; want the new count, then the line erased", got)
	}
}
