package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/humatest"
)

type echoInput struct {
	Body struct {
		Name string `json:"name" minLength:"3"`
	}
}

type echoOutput struct {
	Body struct {
		Name string `json:"name"`
	}
}

// problemAPI is a humatest API with this package's configuration and one
// operation whose handler fails on demand.
func problemAPI(t *testing.T) humatest.TestAPI {
	_, a := humatest.New(t, Config())
	huma.Register(a, huma.Operation{
		OperationID: "echo", Method: http.MethodPost, Path: "/echo", MaxBodyBytes: 65,
	}, func(_ context.Context, in *echoInput) (*echoOutput, error) {
		switch in.Body.Name {
		case "full":
			return nil, errQueueFull(7)
		case "gone":
			return nil, huma.Error404NotFound("no such thing")
		case "boom":
			return nil, errInternal()
		}
		out := &echoOutput{}
		out.Body.Name = in.Body.Name
		return out, nil
	})
	return a
}

type problemBody struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail"`
	Instance string `json:"instance"`
	Error    struct {
		Code    string         `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details"`
	} `json:"error"`
}

func TestEveryErrorIsOneProblemModel(t *testing.T) {
	a := problemAPI(t)
	cases := []struct {
		name        string
		body        any
		status      int
		code        ErrorCode
		wantDetails bool
	}{
		{"validation", map[string]any{"name": "ab"}, 422, CodeUnprocessable, true},
		{"unknown field", map[string]any{"name": "abc", "x": 1}, 422, CodeUnprocessable, true},
		{"malformed json", strings.NewReader(`{"name":`), 400, CodeBadConfig, true},
		{"too large", map[string]any{"name": strings.Repeat("x", 100)}, 413, CodePayloadTooLarge, false},
		{"queue full", map[string]any{"name": "full"}, 429, CodeQueueFull, false},
		{"not found", map[string]any{"name": "gone"}, 404, CodeNotFound, false},
		{"internal", map[string]any{"name": "boom"}, 500, CodeInternal, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp := a.Post("/echo", c.body)
			if resp.Code != c.status {
				t.Fatalf("status %d, want %d: %s", resp.Code, c.status, resp.Body.String())
			}
			if ct := resp.Header().Get("Content-Type"); ct != "application/problem+json" {
				t.Fatalf("Content-Type %q", ct)
			}
			var p problemBody
			if err := json.Unmarshal(resp.Body.Bytes(), &p); err != nil {
				t.Fatal(err)
			}
			if p.Status != c.status || p.Error.Code != string(c.code) || p.Type != problemTypePrefix+string(c.code) ||
				p.Title != http.StatusText(c.status) || p.Detail == "" || p.Detail != p.Error.Message || p.Instance != "/echo" {
				t.Fatalf("problem = %+v", p)
			}
			if (p.Error.Details != nil) != c.wantDetails {
				t.Fatalf("details = %v, want present=%v", p.Error.Details, c.wantDetails)
			}
			raw := map[string]any{}
			_ = json.Unmarshal(resp.Body.Bytes(), &raw)
			if env := raw["error"].(map[string]any); !c.wantDetails {
				if _, has := env["details"]; has {
					t.Fatal("empty details must be omitted")
				}
			}
		})
	}
	resp := a.Post("/echo", map[string]any{"name": "full"})
	if got := resp.Header().Get("Retry-After"); got != "7" {
		t.Fatalf("Retry-After = %q, want 7", got)
	}
	// MaxBodyBytes is the first size rejected: 64 bytes pass, 65 do not.
	under := `{"name":"` + strings.Repeat("y", 53) + `"}`
	if ok := a.Post("/echo", strings.NewReader(under)); len(under) != 64 || ok.Code != http.StatusOK {
		t.Fatalf("a %d-byte body must pass, got %d: %s", len(under), ok.Code, ok.Body.String())
	}
	over := a.Post("/echo", strings.NewReader(under+" "))
	if over.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("a 65-byte body must be rejected, got %d", over.Code)
	}
	// The message states the limit, not the byte huma stopped reading at.
	var p problemBody
	if err := json.Unmarshal(over.Body.Bytes(), &p); err != nil || !strings.Contains(p.Detail, "limit of 64 bytes") {
		t.Fatalf("413 detail %q (%v) does not state the limit of 64 bytes", p.Detail, err)
	}
}

func TestValidationDetailsNameTheLocation(t *testing.T) {
	a := problemAPI(t)
	resp := a.Post("/echo", map[string]any{"name": "ab"})
	var p problemBody
	_ = json.Unmarshal(resp.Body.Bytes(), &p)
	errs, _ := p.Error.Details["errors"].([]any)
	if len(errs) != 1 {
		t.Fatalf("details.errors = %v", p.Error.Details)
	}
	first := errs[0].(map[string]any)
	if first["location"] != "body.name" || !strings.Contains(p.Error.Message, "body.name") {
		t.Fatalf("validation error does not name body.name: %+v / %q", first, p.Error.Message)
	}
}
