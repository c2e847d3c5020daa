package triggers

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/pipeline"
)

// What a request or a file name brings is data: bound into a config, none
// of it is read as a reference by the pipeline, however it is spliced.
func TestBindKeepsEventValuesLiteral(t *testing.T) {
	doc, err := pipeline.ParseDocument([]byte(`{
		"whole": "${trigger.body.v}",
		"typed": "${trigger.body.n}",
		"object": "${trigger.body.o}",
		"spliced": "a-${trigger.body.v}-b",
		"before_brace": "${trigger.body.d}{env:HOME}",
		"two": "${trigger.body.d}${trigger.body.brace}",
		"escaped": "$${env:HOME} ${trigger.header.X-Team}",
		"env": "${env:HOME}"
	}`), pipeline.FormatJSON)
	if err != nil {
		t.Fatal(err)
	}
	e := newEvent(&Trigger{Name: "hook", Kind: KindWebhook}, time.Unix(0, 0))
	e.body = []byte(`{"v": "${env:HOME}", "n": 3, "o": {"k": "${vars.x}"}, "d": "cost $", "brace": "{env:HOME}"}`)
	e.header = http.Header{"X-Team": {"${env:USER}"}}
	out, err := bind(doc, e)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"whole":        "$${env:HOME}",
		"typed":        3.0,
		"object":       map[string]any{"k": "$${vars.x}"},
		"spliced":      "a-$${env:HOME}-b",
		"before_brace": "cost $${env:HOME}",
		"two":          "cost $${env:HOME}",
		"escaped":      "$${env:HOME} $${env:USER}",
		// The config's own references are the pipeline's to resolve.
		"env": "${env:HOME}",
	}
	for k, w := range want {
		g, _ := json.Marshal(got[k])
		wj, _ := json.Marshal(w)
		if string(g) != string(wj) {
			t.Errorf("%s: bound %s, want %s", k, g, wj)
		}
	}
}
