package stdout

import (
	"context"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/plugins/sdk"
)

// One plugin process serves many sessions: a session's writer being
// collected must not close the output the next sessions print to.
func TestSessionsShareTheInheritedOutput(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	t.Setenv(FDEnv, strconv.Itoa(int(w.Fd())))
	const sessions = 20
	for i := range sessions {
		sw, err := Connector{}.Open(context.Background(), []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		if err := sw.Write(context.Background(), sdk.Batch{Count: 1, Records: []byte(`{"session":` + strconv.Itoa(i) + "}\n")}); err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		if err := sw.Close(context.Background()); err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		runtime.GC()
		runtime.GC()
	}
	w.Close()
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Count(string(out), "\n"); got != sessions {
		t.Fatalf("%d lines printed, want %d:\n%s", got, sessions, out)
	}
}
