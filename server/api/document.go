package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
	"github.com/danielgtaylor/huma/v2/yaml"
)

// The order of the document's fields where it helps a reader: what the
// document is before what it holds. Other objects keep sorted keys.
var (
	documentOrder = []string{"openapi", "info", "jsonSchemaDialect", "servers", "security", "tags", "paths", "webhooks", "components", "externalDocs"}
	infoOrder     = []string{"title", "version", "summary", "description", "termsOfService", "contact", "license"}
)

// Document renders the API's OpenAPI document as YAML in specVersion (3.1,
// the native one, or 3.0 for generators that do not read 3.1 yet), without
// serving: registration only describes the operations.
func Document(specVersion string) ([]byte, error) {
	a := humago.New(http.NewServeMux(), Config())
	Register(a, &Deps{})
	doc, err := documentJSON(a.OpenAPI(), specVersion)
	if err != nil {
		return nil, err
	}
	return toYAML(doc, specVersion)
}

// toYAML converts a document from JSON, keeping its order.
func toYAML(doc []byte, specVersion string) ([]byte, error) {
	var out bytes.Buffer
	if err := yaml.Convert(&out, bytes.NewReader(doc)); err != nil {
		return nil, fmt.Errorf("convert the OpenAPI %s document to YAML: %w", specVersion, err)
	}
	return out.Bytes(), nil
}

// documentJSON is the document of o in specVersion as JSON, its fields in
// the order Document writes them.
func documentJSON(o *huma.OpenAPI, specVersion string) ([]byte, error) {
	var doc []byte
	var err error
	switch specVersion {
	case "3.1":
		doc, err = json.Marshal(o)
	case "3.0":
		doc, err = o.Downgrade()
	default:
		return nil, fmt.Errorf("unknown OpenAPI version %q (want 3.1 or 3.0)", specVersion)
	}
	if err != nil {
		return nil, fmt.Errorf("encode the OpenAPI %s document: %w", specVersion, err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(doc, &fields); err != nil {
		return nil, fmt.Errorf("read the OpenAPI %s document: %w", specVersion, err)
	}
	var info map[string]json.RawMessage
	if err := json.Unmarshal(fields["info"], &info); err != nil {
		return nil, fmt.Errorf("read the OpenAPI %s document's info: %w", specVersion, err)
	}
	if specVersion == "3.0" {
		if err := downgradeFurther(fields, info); err != nil {
			return nil, err
		}
	}
	if fields["info"], err = ordered(info, infoOrder); err != nil {
		return nil, err
	}
	return ordered(fields, documentOrder)
}

// serveDocuments serves the documents at the paths huma would (it is told
// not to: see Config), as Document renders them, so the served documents
// are the committed ones.
func serveDocuments(a huma.API) {
	for _, d := range []struct{ path, version, contentType string }{
		{"/openapi.yaml", "3.1", "application/openapi+yaml"},
		{"/openapi-3.0.yaml", "3.0", "application/openapi+yaml"},
		{"/openapi.json", "3.1", "application/openapi+json"},
		{"/openapi-3.0.json", "3.0", "application/openapi+json"},
	} {
		var once sync.Once
		var body []byte
		var err error
		a.Adapter().Handle(&huma.Operation{Method: http.MethodGet, Path: d.path}, func(ctx huma.Context) {
			once.Do(func() {
				if body, err = documentJSON(a.OpenAPI(), d.version); err == nil && strings.HasSuffix(d.path, ".yaml") {
					body, err = toYAML(body, d.version)
				}
			})
			if err != nil {
				_ = huma.WriteErr(a, ctx, http.StatusInternalServerError, "render the OpenAPI document", err)
				return
			}
			ctx.SetHeader("Content-Type", d.contentType)
			_, _ = ctx.BodyWriter().Write(body)
		})
	}
}

// downgradeFurther finishes huma's 3.0 downgrade: a 3.0 license has a URL
// but no SPDX identifier; a 3.0 reference has no siblings (3.1 allows a
// description beside $ref; in 3.0 the referenced schema's own describes it);
// and 3.0 schemas have no contentSchema, so the 3.0 document describes the
// log events in words only and leaves out the schemas only contentSchema
// used.
func downgradeFurther(fields, info map[string]json.RawMessage) error {
	var lic map[string]json.RawMessage
	if err := json.Unmarshal(info["license"], &lic); err != nil {
		return fmt.Errorf("read the OpenAPI 3.0 document's license: %w", err)
	}
	delete(lic, "identifier")
	var err error
	if info["license"], err = json.Marshal(lic); err != nil {
		return fmt.Errorf("encode the OpenAPI 3.0 document's license: %w", err)
	}
	var paths any
	var components map[string]any
	if err := json.Unmarshal(fields["paths"], &paths); err != nil {
		return fmt.Errorf("read the OpenAPI 3.0 document's paths: %w", err)
	}
	if err := json.Unmarshal(fields["components"], &components); err != nil {
		return fmt.Errorf("read the OpenAPI 3.0 document's components: %w", err)
	}
	downgradeSchemas(paths)
	downgradeSchemas(components)
	schemas, _ := components["schemas"].(map[string]any)
	used := map[string]bool{}
	var mark func(v any)
	mark = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if name, ok := strings.CutPrefix(fmt.Sprint(v["$ref"]), "#/components/schemas/"); ok && !used[name] {
				used[name] = true
				mark(schemas[name])
			}
			for _, e := range v {
				mark(e)
			}
		case []any:
			for _, e := range v {
				mark(e)
			}
		}
	}
	mark(paths)
	mark(components["responses"])
	for name := range schemas {
		if !used[name] {
			delete(schemas, name)
		}
	}
	if fields["paths"], err = json.Marshal(paths); err != nil {
		return fmt.Errorf("encode the OpenAPI 3.0 document's paths: %w", err)
	}
	if fields["components"], err = json.Marshal(components); err != nil {
		return fmt.Errorf("encode the OpenAPI 3.0 document's components: %w", err)
	}
	return nil
}

func downgradeSchemas(v any) {
	switch v := v.(type) {
	case map[string]any:
		if ref, ok := v["$ref"]; ok {
			clear(v)
			v["$ref"] = ref
			return
		}
		delete(v, "contentSchema")
		delete(v, "contentMediaType")
		for _, e := range v {
			downgradeSchemas(e)
		}
	case []any:
		for _, e := range v {
			downgradeSchemas(e)
		}
	}
}

// ordered encodes fields as a JSON object with its keys in order; a key
// order does not name is an error, so no field is dropped.
func ordered(fields map[string]json.RawMessage, order []string) (json.RawMessage, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	n := 0
	for _, k := range order {
		v, ok := fields[k]
		if !ok {
			continue
		}
		if n > 0 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(k)
		b.Write(key)
		b.WriteByte(':')
		b.Write(v)
		n++
	}
	if n != len(fields) {
		return nil, fmt.Errorf("the OpenAPI document has fields %v where only %v are placed", keys(fields), order)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func keys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
