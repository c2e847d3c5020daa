package snapshot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
)

// Diff is what would change from one snapshot to another.
type Diff struct {
	Pipeline string `json:"pipeline"`
	// Equal is set when nothing would change.
	Equal bool `json:"equal"`
	// Changes are ordered: settings first, then the rows by id, the
	// fields of a row by path.
	Changes []Change `json:"changes"`
}

// The kinds of a Change.
const (
	Added   = "added"
	Removed = "removed"
	Changed = "changed"
)

// Change is one difference: a whole row added or removed, or one field of
// the settings or of a row added, removed or changed.
type Change struct {
	Kind string `json:"kind"`
	// Row is the matrix row, empty for a setting.
	Row string `json:"row,omitempty"`
	// Path is the field within the settings or the row (source.config.path);
	// empty for a whole row.
	Path string `json:"path,omitempty"`
	// Before and After are the values as JSON, with every secret shown as
	// <secret>; absent for the side that has none.
	Before *string `json:"before,omitempty"`
	After  *string `json:"after,omitempty"`
	// Secret is set when a secret changed (its fingerprint did), which
	// Before and After cannot show.
	Secret bool `json:"secret,omitempty"`
}

// Compare diffs the snapshot that last ran, prev (nil when none was
// recorded: every row is new), with cur.
func Compare(prev *Doc, cur Doc) Diff {
	d := Diff{Pipeline: cur.Pipeline, Changes: []Change{}}
	var before Doc
	if prev != nil {
		before = *prev
	}
	d.Changes = append(d.Changes, fields("", flatten(settingsMap(before, prev != nil)), flatten(settingsMap(cur, true)))...)
	ids := map[string]bool{}
	for id := range before.Rows {
		ids[id] = true
	}
	for id := range cur.Rows {
		ids[id] = true
	}
	sorted := make([]string, 0, len(ids))
	for id := range ids {
		sorted = append(sorted, id)
	}
	sort.Strings(sorted)
	for _, id := range sorted {
		old, had := before.Rows[id]
		now, has := cur.Rows[id]
		switch {
		case !had:
			d.Changes = append(d.Changes, Change{Kind: Added, Row: id, After: ptr(rowSummary(now))})
		case !has:
			d.Changes = append(d.Changes, Change{Kind: Removed, Row: id, Before: ptr(rowSummary(old))})
		default:
			d.Changes = append(d.Changes, fields(id, flatten(toMap(old)), flatten(toMap(now)))...)
		}
	}
	d.Equal = len(d.Changes) == 0
	return d
}

// settingsMap is a doc's settings as a tree; none when the doc is absent.
func settingsMap(d Doc, present bool) map[string]any {
	if !present {
		return map[string]any{}
	}
	return toMap(d.Settings)
}

func rowSummary(r Row) string { return r.Source.Type + " → " + r.Sink.Type }

func ptr(s string) *string { return &s }

// toMap turns a value into the generic tree flatten walks.
func toMap(v any) map[string]any {
	b, _ := json.Marshal(v)
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	_ = dec.Decode(&m)
	return m
}

// flatten maps every leaf of a tree to its dotted path; an array is one
// leaf, rendered whole, as are empty objects.
func flatten(m map[string]any) map[string]string {
	out := map[string]string{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if obj, ok := v.(map[string]any); ok && len(obj) > 0 {
			for k, e := range obj {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				walk(p, e)
			}
			return
		}
		out[prefix] = render(v)
	}
	for k, v := range m {
		walk(k, v)
	}
	return out
}

// render is a value as JSON, without the HTML escapes that would show a
// fingerprint's angle brackets as \u003c.
func render(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}

// fields diffs two flattened trees of one row (or of the settings).
func fields(row string, before, after map[string]string) []Change {
	paths := map[string]bool{}
	for p := range before {
		paths[p] = true
	}
	for p := range after {
		paths[p] = true
	}
	sorted := make([]string, 0, len(paths))
	for p := range paths {
		sorted = append(sorted, p)
	}
	sort.Strings(sorted)
	var out []Change
	for _, p := range sorted {
		b, hadB := before[p]
		a, hasA := after[p]
		c := Change{Row: row, Path: p}
		switch {
		case hadB && hasA && a == b:
			continue
		case !hadB:
			c.Kind, c.After = Added, ptr(shown(a))
		case !hasA:
			c.Kind, c.Before = Removed, ptr(shown(b))
		default:
			c.Kind, c.Before, c.After = Changed, ptr(shown(b)), ptr(shown(a))
			c.Secret = *c.Before == *c.After
		}
		out = append(out, c)
	}
	return out
}

// fingerprints matches a secret's fingerprint in a rendered value.
var fingerprints = regexp.MustCompile(regexp.QuoteMeta(fingerprintPrefix) + `[0-9a-f]+>`)

// shown is a rendered value with its secrets' fingerprints as <secret>.
func shown(v string) string { return fingerprints.ReplaceAllString(v, "<secret>") }

// Render writes the diff for a terminal: one line per change, + added,
// - removed, ~ changed.
func (d Diff) Render(w io.Writer, against string) error {
	if d.Equal {
		_, err := fmt.Fprintf(w, "pipeline %s: no changes against %s\n", d.Pipeline, against)
		return err
	}
	if _, err := fmt.Fprintf(w, "pipeline %s: %d change(s) against %s\n", d.Pipeline, len(d.Changes), against); err != nil {
		return err
	}
	for _, c := range d.Changes {
		var b strings.Builder
		b.WriteString(map[string]string{Added: "  + ", Removed: "  - ", Changed: "  ~ "}[c.Kind])
		switch {
		case c.Row != "" && c.Path == "":
			fmt.Fprintf(&b, "row %s", c.Row)
		case c.Row != "":
			fmt.Fprintf(&b, "row %s: %s", c.Row, c.Path)
		default:
			fmt.Fprintf(&b, "setting %s", c.Path)
		}
		switch {
		case c.Secret:
			b.WriteString(": (a secret changed)")
		case c.Kind == Changed:
			fmt.Fprintf(&b, ": %s -> %s", *c.Before, *c.After)
		case c.After != nil:
			fmt.Fprintf(&b, ": %s", *c.After)
		case c.Before != nil:
			fmt.Fprintf(&b, ": %s", *c.Before)
		}
		if _, err := fmt.Fprintln(w, b.String()); err != nil {
			return err
		}
	}
	return nil
}

// Render writes what the snapshot holds for a terminal: the settings, then
// each row's connectors and config fields, secrets as <secret>.
func (d Doc) Render(w io.Writer) error {
	var b strings.Builder
	st := d.Settings
	fmt.Fprintf(&b, "pipeline %s: %d row(s); max_concurrent %d, on_error %s, delivery %s, retry %d attempt(s) from %s to %s",
		d.Pipeline, len(d.Rows), st.MaxConcurrent, st.OnError, st.Delivery, st.RetryMaxAttempts, st.RetryInitialBackoff, st.RetryMaxBackoff)
	if st.ShardCount > 0 {
		fmt.Fprintf(&b, ", %d shards", st.ShardCount)
	}
	b.WriteString("\n")
	ids := make([]string, 0, len(d.Rows))
	for id := range d.Rows {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		r := d.Rows[id]
		fmt.Fprintf(&b, "  row %s: %s", id, rowSummary(r))
		if r.SinkWriteMode != "" {
			fmt.Fprintf(&b, " (%s)", r.SinkWriteMode)
		}
		b.WriteString("\n")
		leaves := flatten(map[string]any{"source": toMap(r.Source.Config), "sink": toMap(r.Sink.Config)})
		paths := make([]string, 0, len(leaves))
		for p := range leaves {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			fmt.Fprintf(&b, "    %s: %s\n", p, shown(leaves[p]))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
