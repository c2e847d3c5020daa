package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/openapi/client"
)

// Config bombs: small bodies whose parse would cost gigabytes. Each is
// refused with a 400 naming the limit it broke, and the server's peak
// memory stays within a ceiling, read from /proc.
func TestConfigBombsAreRefusedWithinAMemoryCeiling(t *testing.T) {
	// The build without the race detector: its memory is the product's.
	s := start(t, serverOpts{bin: fastBin})
	pid := s.cmd.Process.Pid
	c := s.admin()
	ctx := context.Background()

	var keys strings.Builder
	for i := 0; i <= 5000; i++ {
		fmt.Fprintf(&keys, "k%d: v\n", i)
	}
	var paths strings.Builder
	for i := 0; i < 60; i++ {
		fmt.Fprintf(&paths, "{%s%d: ", strings.Repeat("k", 20_000), i)
	}
	bombs := []struct {
		name, config, format, want string
	}{
		{"nesting", "version: 1\nname: " + strings.Repeat("[", 30_000) + strings.Repeat("]", 30_000), "yaml", "nests deeper than 200 levels"},
		{"tokens", "version: 1\nname: " + strings.Repeat("[", 40_000) + strings.Repeat("]", 40_000), "yaml", "limit of 65536 YAML tokens"},
		{"documents", strings.Repeat("---\n", 20_000), "yaml", "limit of 16 YAML documents"},
		{"keys", keys.String(), "yaml", "limit of 5000 keys in one YAML mapping"},
		{"paths", paths.String() + "[1]", "yaml", "bytes of key paths"},
		{"json values", `{"a": [` + strings.Repeat("1,", 100_000) + `1]}`, "json", "limit of 100000 values"},
	}
	base := procStatusKB(pid, "VmHWM")
	for _, b := range bombs {
		resp, err := c.SubmitRunWithResponse(ctx, client.SubmitRequest{Config: b.config, ConfigFormat: ptr(client.SubmitRequestConfigFormat(b.format))})
		if err != nil {
			t.Fatalf("%s: %v", b.name, err)
		}
		if resp.StatusCode() != http.StatusBadRequest || resp.ApplicationproblemJSON400 == nil ||
			!strings.Contains(resp.ApplicationproblemJSON400.Error.Message, b.want) {
			t.Fatalf("%s: %d %.300s; want 400 naming %q", b.name, resp.StatusCode(), resp.Body, b.want)
		}
	}
	// Doctor loads configs the same way.
	dr, err := c.RunDoctorWithResponse(ctx, client.DoctorRequest{Config: bombs[0].config})
	if err != nil || dr.StatusCode() != http.StatusBadRequest || !strings.Contains(string(dr.Body), bombs[0].want) {
		t.Fatalf("doctor with a bomb: %v %d %.300s", err, dr.StatusCode(), dr.Body)
	}
	const ceilingKB = 64 << 10
	if grew := procStatusKB(pid, "VmHWM") - base; grew > ceilingKB {
		t.Fatalf("the bombs raised the server's peak memory by %d KiB, more than %d KiB", grew, ceilingKB)
	}
	list, err := c.ListRunsWithResponse(ctx, nil)
	if err != nil || list.JSON200 == nil || len(list.JSON200.Runs) != 0 {
		t.Fatalf("refused configs must record nothing: %v %.300s", err, list.Body)
	}
}
