package host_test

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
)

// testLogger collects the host's log and prints it if the test fails, so a
// failure shows what the plugins said. Register it before anything that
// logs in a cleanup.
func testLogger(t testing.TB) *slog.Logger {
	logger, _ := testLog(t)
	return logger
}

// testLog is testLogger that also returns what was logged.
func testLog(t testing.TB) (*slog.Logger, *lockedBuffer) {
	w := &lockedBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("host log:\n%s", w.String())
		}
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug})), w
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *lockedBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}
