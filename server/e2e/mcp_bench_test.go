package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/faucet-dev/faucet/openapi/client"
)

// BenchmarkMCPGetRun measures what MCP adds to a read: each iteration reads
// one run three ways, interleaved so the machine's noise falls on all
// three alike: GET /v1/runs/{id} with the generated client (the
// reference), get_run through POST /mcp, and get_run through a faucet mcp
// process driving the same server. It reports each as ops/s and the MCP
// ways as ratios of the reference's time.
func BenchmarkMCPGetRun(b *testing.B) {
	s := start(b, serverOpts{args: []string{"--mcp", "--log-level", "warn"}})
	id := s.submit(client.SubmitRequest{Config: generateToFile(3, filepath.Join(b.TempDir(), "out.jsonl"))}).RunId
	s.await(id, client.RunStatusCompleted)
	api := s.admin()
	viaHTTP, viaStdio := httpSession(b, s, adminToken), stdioSession(b, s, adminToken)
	ctx := context.Background()
	params := &sdk.CallToolParams{Name: "get_run", Arguments: map[string]any{"run_id": id}}
	tool := func(m mcpSession) {
		if res, err := m.cs.CallTool(ctx, params); err != nil || res.IsError {
			b.Fatalf("get_run: %v %+v", err, res)
		}
	}
	var spent [3]time.Duration
	timed := func(i int, f func()) {
		t0 := time.Now()
		f()
		spent[i] += time.Since(t0)
	}
	b.ResetTimer()
	for range b.N {
		timed(0, func() {
			if r, err := api.GetRunWithResponse(ctx, id); err != nil || r.JSON200 == nil {
				b.Fatalf("GET /v1/runs/%s: %v", id, err)
			}
		})
		timed(1, func() { tool(viaHTTP) })
		timed(2, func() { tool(viaStdio) })
	}
	b.StopTimer()
	for i, unit := range []string{"api_ops/s", "mcp_http_ops/s", "mcp_stdio_ops/s"} {
		b.ReportMetric(float64(b.N)/spent[i].Seconds(), unit)
	}
	b.ReportMetric(spent[1].Seconds()/spent[0].Seconds(), "mcp_http/api")
	b.ReportMetric(spent[2].Seconds()/spent[0].Seconds(), "mcp_stdio/api")
}
