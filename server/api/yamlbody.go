package api

import (
	"encoding/json"
	"fmt"
	"mime"

	"github.com/danielgtaylor/huma/v2"
)

// yamlMediaTypes are the Content-Types of a submit or doctor body that is the
// pipeline config itself, so `curl --data-binary @pipeline.yaml` works
// without wrapping the file in JSON.
var yamlMediaTypes = []string{"application/yaml", "application/x-yaml", "text/yaml"}

// yamlConfigBody is the huma format of those media types. It reads a body as
// the JSON request {"config": <body>, "config_format": "yaml"}, which huma
// then validates like any JSON body; the run's other fields come from query
// parameters. A response negotiated as YAML is written as JSON, which every
// YAML parser reads.
var yamlConfigBody = huma.Format{
	Marshal: huma.DefaultJSONFormat.Marshal,
	Unmarshal: func(data []byte, v any) error {
		b, err := json.Marshal(map[string]string{"config": string(data), "config_format": string(FormatYAML)})
		if err != nil {
			return fmt.Errorf("wrap YAML config: %w", err)
		}
		return json.Unmarshal(b, v)
	},
}

// isYAMLBody tells whether a request's Content-Type is one of yamlMediaTypes.
func isYAMLBody(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	for _, ct := range yamlMediaTypes {
		if mt == ct {
			return true
		}
	}
	return false
}

// yamlRequestBody documents the YAML media types of a request body that
// also takes JSON (added by huma from the input's Body).
func yamlRequestBody(doc string) *huma.RequestBody {
	content := map[string]*huma.MediaType{}
	for _, ct := range yamlMediaTypes {
		content[ct] = &huma.MediaType{Schema: &huma.Schema{Type: huma.TypeString, MinLength: ptrInt(1), Description: doc}}
	}
	return &huma.RequestBody{Required: true, Content: content}
}

func ptrInt(n int) *int { return &n }
