package api

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2/adapters/humago"
	"github.com/danielgtaylor/huma/v2/humatest"
)

// document is the 3.1 document as plain JSON values, the way SDK generators
// read it.
func document(t *testing.T) map[string]any {
	t.Helper()
	a := humago.New(http.NewServeMux(), Config())
	Register(a, &Deps{})
	b, err := json.Marshal(a.OpenAPI())
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

type operation struct {
	method, path string
	op           map[string]any
}

func operations(doc map[string]any) []operation {
	var out []operation
	for path, item := range doc["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			out = append(out, operation{method, path, op.(map[string]any)})
		}
	}
	return out
}

// TestEveryOperationFollowsTheConventions checks what the groups give every
// route (see groups), so a route added without them fails here.
func TestEveryOperationFollowsTheConventions(t *testing.T) {
	doc := document(t)
	ops := operations(doc)
	if len(ops) < 14 {
		t.Fatalf("only %d operations", len(ops))
	}
	for _, o := range ops {
		name := o.method + " " + o.path
		sec := o.op["security"]
		if strings.HasPrefix(o.path, "/v1/") {
			if !reflect.DeepEqual(sec, []any{map[string]any{"bearerAuth": []any{}}, map[string]any{}}) {
				t.Errorf("%s: security %v, want a bearer token or none", name, sec)
			}
		} else if !reflect.DeepEqual(sec, []any{}) {
			t.Errorf("%s: security %v, want none (an open route)", name, sec)
		}
		responses := o.op["responses"].(map[string]any)
		if ref(responses["default"]) != "#/components/responses/Problem" {
			t.Errorf("%s: default response %v, want the Problem response", name, responses["default"])
		}
		for code, r := range responses {
			if code == "default" || code[0] < '4' {
				continue
			}
			want := "#/components/responses/Problem"
			switch code {
			case "401":
				want = "#/components/responses/Unauthorized"
			case "429":
				want = "#/components/responses/TooManyRequests"
			case "503":
				if o.path == "/readyz" {
					continue
				}
			}
			if got := ref(r); got != want {
				t.Errorf("%s: %s response %v, want %s", name, code, r, want)
			}
		}
		if strings.HasPrefix(o.path, "/v1/") && responses["401"] == nil {
			t.Errorf("%s: no 401", name)
		}
		// A reload answers 422 for the files it reads, not for a parameter.
		if code := "422"; responses[code] != nil && o.op["requestBody"] == nil && o.op["operationId"] != "reload" {
			t.Errorf("%s: 422 without a body: a bad parameter is 400", name)
		}
	}
}

func ref(v any) string {
	m, _ := v.(map[string]any)
	s, _ := m["$ref"].(string)
	return s
}

func TestSharedResponsesDeclareTheirHeaders(t *testing.T) {
	responses := document(t)["components"].(map[string]any)["responses"].(map[string]any)
	for name, header := range map[string]string{"Unauthorized": "WWW-Authenticate", "TooManyRequests": "Retry-After"} {
		r := responses[name].(map[string]any)
		h, _ := r["headers"].(map[string]any)[header].(map[string]any)
		if h == nil || h["required"] != true {
			t.Errorf("%s does not declare a required %s header: %v", name, header, r)
		}
		if ref(r["content"].(map[string]any)["application/problem+json"].(map[string]any)["schema"]) != "#/components/schemas/Problem" {
			t.Errorf("%s is not a Problem: %v", name, r)
		}
	}
}

// TestSchemasSuitGenerators: no request field carries a default (generators
// make such fields required), no object is open (generators add index
// signatures and extra-property maps), every component is used by an
// operation (generators prune the rest), and each enum is written once.
func TestSchemasSuitGenerators(t *testing.T) {
	doc := document(t)
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	walk(doc["paths"], func(path []string, m map[string]any) {
		if _, ok := m["default"]; ok && len(path) > 1 && path[len(path)-2] == "properties" {
			t.Errorf("%s has a default", strings.Join(path, "/"))
		}
	})
	for name, s := range schemas {
		walk(s, func(path []string, m map[string]any) {
			// A property named default (ParamSpec's) is no default.
			if _, ok := m["default"]; ok && len(path) > 0 && path[len(path)-1] != "schema" && path[len(path)-1] != "properties" {
				t.Errorf("schema %s/%s has a default", name, strings.Join(path, "/"))
			}
			if m["additionalProperties"] == true {
				t.Errorf("schema %s/%s is open", name, strings.Join(path, "/"))
			}
			if enum, ok := m["enum"].([]any); ok && len(enum) > 1 && enum[0] == "pending" && enum[1] == "queued" && name != "RunStatus" {
				t.Errorf("schema %s/%s writes out the run statuses instead of referring to RunStatus", name, strings.Join(path, "/"))
			}
		})
	}
	used := map[string]bool{}
	var mark func(v any)
	mark = func(v any) {
		walk(v, func(_ []string, m map[string]any) {
			r, _ := m["$ref"].(string)
			if name, ok := strings.CutPrefix(r, "#/components/schemas/"); ok && !used[name] {
				used[name] = true
				mark(schemas[name])
			}
			if name, ok := strings.CutPrefix(r, "#/components/responses/"); ok && !used["response "+name] {
				used["response "+name] = true
				mark(doc["components"].(map[string]any)["responses"].(map[string]any)[name])
			}
		})
	}
	mark(doc["paths"])
	for name := range schemas {
		if !used[name] {
			t.Errorf("schema %s is used by no operation", name)
		}
	}
	for _, name := range []string{"RunStatus", "Role", "ConfigFormat", "ErrorCode", "LogLine", "LogEnd", "LogTruncated", "LogPage"} {
		if schemas[name] == nil {
			t.Errorf("no component %s", name)
		}
	}
	enum := map[string]bool{}
	for _, c := range schemas["ErrorCode"].(map[string]any)["enum"].([]any) {
		enum[c.(string)] = true
	}
	for status, code := range statusCodes {
		if !enum[string(code)] {
			t.Errorf("the code %s of status %d is not in the ErrorCode enum", code, status)
		}
	}
}

// walk calls f on every object under v with the keys leading to it.
func walk(v any, f func(path []string, m map[string]any)) {
	var rec func(path []string, v any)
	rec = func(path []string, v any) {
		switch v := v.(type) {
		case map[string]any:
			f(path, v)
			for k, e := range v {
				rec(append(path[:len(path):len(path)], k), e)
			}
		case []any:
			for _, e := range v {
				rec(path, e)
			}
		}
	}
	rec(nil, v)
}

func TestDocumentStartsWithWhatItIs(t *testing.T) {
	for _, v := range []string{"3.1", "3.0"} {
		doc, err := Document(v)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(doc, []byte("openapi: "+v+".")) || !bytes.Contains(doc, []byte("\ninfo:\n  title: ")) {
			t.Errorf("the %s document starts %q", v, doc[:min(len(doc), 80)])
		}
		if bytes.Index(doc, []byte("\ninfo:")) > bytes.Index(doc, []byte("\npaths:")) {
			t.Errorf("the %s document has info after paths", v)
		}
	}
	if _, err := Document("2.0"); err == nil {
		t.Error("Document(2.0) succeeded")
	}
}

// TestServedDocumentsAreTheRendered: the server serves what `faucet openapi`
// prints, which is what is committed.
func TestServedDocumentsAreTheRendered(t *testing.T) {
	_, a := humatest.New(t, Config())
	Register(a, &Deps{})
	for path, version := range map[string]string{"/openapi.yaml": "3.1", "/openapi-3.0.yaml": "3.0", "/openapi.json": "3.1", "/openapi-3.0.json": "3.0"} {
		want, err := Document(version)
		if err != nil {
			t.Fatal(err)
		}
		resp := a.Get(path)
		got := resp.Body.Bytes()
		if strings.HasSuffix(path, ".json") {
			if got, err = toYAML(got, version); err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
		}
		if resp.Code != http.StatusOK || !bytes.Equal(got, want) {
			t.Errorf("GET %s: %d, not the %s document Document renders", path, resp.Code, version)
		}
	}
}
