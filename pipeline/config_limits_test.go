package pipeline

import (
	"fmt"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/lexer"
)

// bombs are documents past each limit (and within the others), each with
// the message naming its limit.
func bombs() []struct{ name, src, want string } {
	var keys, longKeys strings.Builder
	for i := 0; i <= MaxConfigMappingKeys; i++ {
		fmt.Fprintf(&keys, "k%d: v\n", i)
	}
	// Paths that grow with every level: long keys nested deep, then many
	// items under them.
	key := strings.Repeat("k", 20_000)
	for i := 0; i < 60; i++ {
		fmt.Fprintf(&longKeys, "{%s%d: ", key, i)
	}
	longKeys.WriteString(strings.Repeat("[1,1,1,1]", 1))
	return []struct{ name, src, want string }{
		{"deep flow", "version: 1\nname: " + strings.Repeat("[", 10_000) + strings.Repeat("]", 10_000) + "\n", "nests deeper than 200 levels"},
		{"deep block sequence", strings.Repeat("- ", 10_000) + "x\n", "nests deeper than 200 levels"},
		{"deep block mapping", blockNest(MaxConfigDepth + 5), "nests deeper than 200 levels"},
		{"documents", strings.Repeat("--- a\n", 2_000), "limit of 16 YAML documents"},
		{"empty documents", strings.Repeat("---\n", 2_000), "limit of 16 YAML documents"},
		{"keys of one mapping", keys.String(), "limit of 5000 keys in one YAML mapping"},
		{"tokens", "a: [" + strings.Repeat("1,", MaxConfigTokens) + "1]\n", "limit of 65536 YAML tokens"},
		{"comments", strings.Repeat("#\n", MaxConfigTokens+1) + "a: 1\n", "limit of 65536 YAML tokens"},
		{"key paths", longKeys.String(), "limit of 8388608 bytes of key paths"},
	}
}

// blockNest is a block mapping n levels deep, each level indented by one.
func blockNest(n int) string {
	var b strings.Builder
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "%sk:\n", strings.Repeat(" ", i))
	}
	fmt.Fprintf(&b, "%sk: v\n", strings.Repeat(" ", n))
	return b.String()
}

func TestConfigLimitsRefuseBombs(t *testing.T) {
	for _, b := range bombs() {
		t.Run(b.name, func(t *testing.T) {
			probs := loadErr(t, b.src, LoadOptions{Format: FormatYAML})
			wantProblem(t, probs, "", 0, 0, b.want)
		})
	}
}

func TestConfigLimitsJSON(t *testing.T) {
	many := `{"a": [` + strings.Repeat("1,", MaxConfigValues) + `1]}`
	probs := loadErr(t, many, LoadOptions{Format: FormatJSON})
	wantProblem(t, probs, "", 0, 0, "limit of 100000 values")

	key := strings.Repeat("k", 50_000)
	var deep strings.Builder
	for i := 0; i < 150; i++ {
		fmt.Fprintf(&deep, `{"%s%d": `, key, i)
	}
	deep.WriteString("[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]" + strings.Repeat("}", 150))
	probs = loadErr(t, deep.String(), LoadOptions{Format: FormatJSON})
	wantProblem(t, probs, "", 0, 0, "limit of 8388608 bytes of key paths")
}

// The limits leave room for large honest configs: a matrix of thousands of
// rows in YAML, and in JSON on one line (where positions must not cost a
// pass over the line per key).
func TestConfigLimitsAdmitLargeConfigs(t *testing.T) {
	var y, j strings.Builder
	y.WriteString(minimalYAML + "matrix:\n")
	j.WriteString(`{"version": 1, "pipeline": {"source": {"type": "csv", "config": {"path": "in.csv"}}, "sink": {"type": "jsonl", "config": {"path": "o"}}}, "matrix": [`)
	const rows = 3000
	for i := 0; i < rows; i++ {
		fmt.Fprintf(&y, "  - id: r%d\n    vars: {table: t%d}\n", i, i)
		if i > 0 {
			j.WriteString(",")
		}
		fmt.Fprintf(&j, `{"id": "r%d", "vars": {"table": "t%d"}}`, i, i)
	}
	j.WriteString("]}")
	for _, c := range []struct {
		src    string
		format Format
	}{{y.String(), FormatYAML}, {j.String(), FormatJSON}} {
		plan := mustLoad(t, c.src, LoadOptions{Format: c.format})
		if len(plan.Invocations) != rows {
			t.Fatalf("%s: %d invocations, want %d", c.format, len(plan.Invocations), rows)
		}
	}
	// A problem deep in the one-line JSON is still placed exactly.
	bad := strings.Replace(j.String(), `"id": "r2999"`, `"id": 7`, 1)
	probs := loadErr(t, bad, LoadOptions{Format: FormatJSON})
	col := strings.Index(bad, `{"id": 7`) + 2
	wantProblem(t, probs, "matrix[2999].id", 1, col, "")
}

// yamlTokenBound must never count fewer tokens than the lexer makes, or a
// document could slip past MaxConfigTokens.
func TestYAMLTokenBoundCoversTheLexer(t *testing.T) {
	docs := []string{
		minimalYAML, "a:b", "a: 'it''s'", `a: "x\"y" # c`, "- - - [a,{b: c}]", "&a x: *a", "!!str a: b",
		"a: |\n  line\n  more\n", "a: >-\n  folded\n", "%YAML 1.2\n---\na: 1\n...\n", "? a\n: b\n",
		"[a]: b", "a: {b: [c, d], e: f}", "k: -1", "'a':b", "\"a\":\"b\"", "a:\n- 1\n-   - 2\n", "a: 1 # x\n#y\n",
	}
	for _, b := range bombs() {
		if len(b.src) < 100_000 {
			docs = append(docs, b.src)
		}
	}
	for _, d := range docs {
		if got, lexed := yamlTokenBound([]byte(d), 1<<30), len(lexer.Tokenize(d)); got < lexed {
			t.Errorf("bound %d < %d tokens of %.60q", got, lexed, d)
		}
	}
}
