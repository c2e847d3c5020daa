package main

import (
	"encoding/json"
	"testing"
)

func TestSchemaTriggers(t *testing.T) {
	var doc struct {
		ID         string                     `json:"$id"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	out := mustFaucet(t, "schema", "triggers")
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("faucet schema triggers is not JSON: %v\n%s", err, out)
	}
	if doc.ID == "" || doc.Properties["triggers"] == nil || doc.Properties["version"] == nil {
		t.Fatalf("faucet schema triggers is not the triggers file's schema: %s", out)
	}
	if _, err := faucet(t, "schema", "pipelines"); err == nil {
		t.Fatal("faucet schema of an unknown format succeeded")
	}
}
