// Package scenario is what the Go SDK scenarios share: the environment
// openapi/sdk_test.go sets, failing with a message, and reading an event
// stream. It is built in a throwaway module next to freshly generated
// clients, never as part of faucet.
package scenario

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

// Env is the scenario's environment.
type Env struct {
	URL, NoAuthURL, Token, Name, Config, HoldConfig string
}

// Load reads the environment, failing when a variable is missing.
func Load() Env {
	get := func(name string) string {
		v := os.Getenv(name)
		if v == "" {
			Failf("%s is not set: run this through openapi/sdk_test.go", name)
		}
		return v
	}
	return Env{
		URL: get("FAUCET_URL"), NoAuthURL: get("FAUCET_NOAUTH_URL"), Token: get("FAUCET_TOKEN"),
		Name: get("FAUCET_SCENARIO"), Config: get("FAUCET_CONFIG"), HoldConfig: get("FAUCET_HOLD_CONFIG"),
	}
}

// Failf ends the scenario with a message.
func Failf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "scenario failed: "+format+"\n", args...)
	os.Exit(1)
}

// Check fails the scenario unless ok.
func Check(ok bool, format string, args ...any) {
	if !ok {
		Failf(format, args...)
	}
}

// Must fails the scenario on err.
func Must(err error, what string) {
	if err != nil {
		Failf("%s: %v", what, err)
	}
}

// Event is one server-sent event.
type Event struct {
	Name, ID, Data string
}

// Events reads a whole event stream; comments are skipped.
func Events(r io.Reader) ([]Event, error) {
	var out []Event
	var cur Event
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Data != "" {
				out = append(out, cur)
			}
			cur = Event{}
		case strings.HasPrefix(line, "event: "):
			cur.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "id: "):
			cur.ID = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			cur.Data += strings.TrimPrefix(line, "data: ")
		}
	}
	return out, sc.Err()
}
