package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/faucet-dev/faucet/openapi/client"
)

func newCatalogCmd() *cobra.Command {
	sf := &serverFlags{}
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "Browse the datasets a faucet serve's runs read and wrote, their schemas and lineage",
		Long: `Browse the data movement catalog of a faucet serve: every dataset its runs read
or wrote (a file, a table), its schema timeline and volume, and the lineage
edges from the datasets runs read to the ones they wrote. Every run records
into it when it finishes. --server and --token as for faucet runs.`,
	}
	sf.register(cmd, true)
	cmd.AddCommand(sf.datasetsCmd(), sf.showDatasetCmd(), sf.lineageCmd())
	return cmd
}

func (sf *serverFlags) datasetsCmd() *cobra.Command {
	var (
		kind, q, cursor string
		limit           int64
		ids             bool
		out             *outputFormat
	)
	cmd := &cobra.Command{
		Use:   "datasets",
		Short: "List the catalogued datasets, newest activity first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			params := &client.ListCatalogDatasetsParams{}
			if kind != "" {
				params.Kind = &kind
			}
			if q != "" {
				params.Q = &q
			}
			if cursor != "" {
				params.Cursor = &cursor
			}
			if limit > 0 {
				params.Limit = &limit
			}
			c, err := sf.connect(cmd)
			if err != nil {
				return err
			}
			resp, err := c.ListCatalogDatasetsWithResponse(cmd.Context(), params)
			if err != nil {
				return err
			}
			if resp.JSON200 == nil {
				return sf.apiError(resp.HTTPResponse, resp.Body)
			}
			page := resp.JSON200
			switch {
			case *out == outputJSON:
				return printJSON(cmd.OutOrStdout(), page)
			case ids:
				for _, d := range page.Datasets {
					if _, err := fmt.Fprintln(cmd.OutOrStdout(), d.Id); err != nil {
						return err
					}
				}
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tKIND\tROLES\tRUNS\tRECORDS\tSCHEMA\tLAST SEEN\tURI")
			for _, d := range page.Datasets {
				roles := make([]string, len(d.Roles))
				for i, r := range d.Roles {
					roles[i] = string(r)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", d.Id, d.Kind, strings.Join(roles, ","), d.Runs, d.TotalRecords,
					schemaLabel(d.SchemaVersions), d.LastSeen.Format(time.RFC3339), d.Uri)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if page.NextCursor != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "more: faucet catalog datasets --cursor %s\n", *page.NextCursor)
			}
			return nil
		},
	}
	out = addOutputFlags(cmd)
	cmd.Flags().StringVar(&kind, "kind", "", "only datasets of this connector kind (csv, postgres, …)")
	cmd.Flags().StringVar(&q, "q", "", "only datasets whose URI contains this, ignoring case")
	cmd.Flags().Int64Var(&limit, "limit", 0, "at most this many datasets (server default 100, at most 1000)")
	cmd.Flags().StringVar(&cursor, "cursor", "", "the next page after a listing that said more")
	cmd.Flags().BoolVar(&ids, "ids", false, "print only the dataset ids, one a line")
	return cmd
}

func schemaLabel(versions int64) string {
	if versions == 0 {
		return "-"
	}
	return fmt.Sprintf("v%d", versions)
}

// detailView is a dataset detail as the show command reads it: the
// schemas kept raw, so their columns print in their order, which the
// generated client's maps would lose.
type detailView struct {
	client.CatalogDatasetDetail
	CurrentSchema  json.RawMessage `json:"current_schema"`
	SchemaTimeline []struct {
		client.CatalogSchemaVersion
		Schema json.RawMessage `json:"schema"`
	} `json:"schema_timeline"`
}

func (sf *serverFlags) showDatasetCmd() *cobra.Command {
	var out *outputFormat
	cmd := &cobra.Command{
		Use:   "show DATASET_ID",
		Short: "Show a dataset: its schema and how it changed, its recent runs and its neighbours",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := sf.connect(cmd)
			if err != nil {
				return err
			}
			resp, err := c.GetCatalogDatasetWithResponse(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if resp.JSON200 == nil {
				return sf.apiError(resp.HTTPResponse, resp.Body)
			}
			if *out == outputJSON {
				_, err := cmd.OutOrStdout().Write(append(bytes.TrimSpace(resp.Body), '\n'))
				return err
			}
			var d detailView
			if err := json.Unmarshal(resp.Body, &d); err != nil {
				return fmt.Errorf("decode the dataset: %w", err)
			}
			return printDataset(cmd.OutOrStdout(), &d)
		},
	}
	out = addOutputFlags(cmd)
	return cmd
}

func printDataset(w io.Writer, d *detailView) error {
	roles := make([]string, len(d.Roles))
	for i, r := range d.Roles {
		roles[i] = string(r)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "dataset\t%s\n", d.Id)
	fmt.Fprintf(tw, "uri\t%s\n", d.Uri)
	fmt.Fprintf(tw, "kind\t%s (%s)\n", d.Kind, strings.Join(roles, ", "))
	fmt.Fprintf(tw, "runs\t%d, %d records in all, %d in the last\n", d.Runs, d.TotalRecords, d.LastRecords)
	fmt.Fprintf(tw, "last run\t%s of pipeline %s, %s\n", d.LastRunId, d.Pipeline, d.LastSeen.Format(time.RFC3339))
	fmt.Fprintf(tw, "first seen\t%s\n", d.FirstSeen.Format(time.RFC3339))
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(d.SchemaTimeline) > 0 {
		last := d.SchemaTimeline[len(d.SchemaTimeline)-1]
		fmt.Fprintf(w, "\nschema, version %d (%s):\n", last.Version, last.SchemaHash)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, c := range columns(last.Schema) {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", c.name, c.fragment.typeText(), c.fragment.DBType)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintln(w, "\nschema timeline:")
		for _, v := range d.SchemaTimeline {
			fmt.Fprintf(w, "  v%d  %s  run %s%s\n", v.Version, v.RecordedAt.Format(time.RFC3339), v.RunId, diffText(v.Diff))
		}
	}
	if len(d.Stats) > 0 {
		fmt.Fprintln(w, "\nrecent runs:")
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, s := range d.Stats {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%d records\t%s\n", s.RecordedAt.Format(time.RFC3339), s.RunId, s.RowId, s.Role, s.Status,
				s.Records, (time.Duration(s.DurationMs) * time.Millisecond).String())
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, side := range []struct {
		title string
		edges []client.CatalogLineageEdge
		uri   func(client.CatalogLineageEdge) (string, string)
	}{
		{"upstream (read into it)", d.Upstream, func(e client.CatalogLineageEdge) (string, string) { return e.SrcId, e.SrcUri }},
		{"downstream (written from it)", d.Downstream, func(e client.CatalogLineageEdge) (string, string) { return e.DstId, e.DstUri }},
	} {
		if len(side.edges) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s:\n", side.title)
		for _, e := range side.edges {
			id, uri := side.uri(e)
			fmt.Fprintf(w, "  %s  %s  (pipeline %s, %d run(s), %d records last)\n", id, uri, e.Pipeline, e.Runs, e.LastRecords)
		}
	}
	return nil
}

// column is one column of a schema as the API sends it.
type column struct {
	name     string
	fragment fragment
}

type fragment struct {
	Type   any    `json:"type"`
	DBType string `json:"x-db-type"`
}

// typeText is a fragment's type for people: the JSON type, ? when
// nullable, "any" for values of several types.
func (f fragment) typeText() string {
	switch t := f.Type.(type) {
	case string:
		return t
	case []any:
		if len(t) > 0 {
			if s, ok := t[0].(string); ok {
				return s + "?"
			}
		}
	}
	return "any"
}

// columns reads a record schema's properties in their order.
func columns(raw json.RawMessage) []column {
	var schema struct {
		Properties json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(raw, &schema) != nil || len(schema.Properties) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(schema.Properties))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	var out []column
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return out
		}
		name, _ := tok.(string)
		var f fragment
		if err := dec.Decode(&f); err != nil {
			return out
		}
		out = append(out, column{name: name, fragment: f})
	}
	return out
}

// diffText is a schema version's change on one line.
func diffText(d *client.SchemaChange) string {
	if d == nil {
		return ""
	}
	var parts []string
	text := func(f *client.ColumnFragment) string {
		if f == nil {
			return ""
		}
		return fragment{Type: f.Type, DBType: deref(f.XDbType)}.typeText()
	}
	for _, c := range d.Added {
		parts = append(parts, "+"+c.Column+" "+text(&c.To))
	}
	for _, c := range append(append([]client.ColumnChange{}, d.Widened...), d.Changed...) {
		parts = append(parts, "~"+c.Column+" "+text(c.From)+" -> "+text(&c.To))
	}
	for _, name := range d.Removed {
		parts = append(parts, "-"+name)
	}
	return "  " + strings.Join(parts, ", ")
}

// lineageFormat is lineage's --format: text, dot (Graphviz) or json.
type lineageFormat string

func (f *lineageFormat) String() string { return string(*f) }
func (f *lineageFormat) Type() string   { return "text|dot|json" }

func (f *lineageFormat) Set(s string) error {
	switch s {
	case "text", "dot", "json":
		*f = lineageFormat(s)
		return nil
	}
	return fmt.Errorf("want text, dot or json, not %q", s)
}

func (sf *serverFlags) lineageCmd() *cobra.Command {
	var (
		root   string
		depth  int64
		format = lineageFormat("text")
		out    *outputFormat
	)
	cmd := &cobra.Command{
		Use:   "lineage",
		Short: "Print the lineage graph: the whole graph, or the datasets around --root",
		Long: `Print the lineage graph: one edge per pair of datasets a run read from and
wrote to. With --root, only the edges within --depth hops of that dataset, in
either direction. --format dot prints a Graphviz graph:

  faucet catalog lineage --format dot | dot -Tsvg > lineage.svg`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if *out == outputJSON {
				if cmd.Flags().Changed("format") && format != "json" {
					return usageErrorf("--output json and --format %s: choose one", format)
				}
				format = "json"
			}
			params := &client.GetCatalogLineageParams{}
			if root != "" {
				params.Root = &root
			}
			if cmd.Flags().Changed("depth") {
				if root == "" {
					return usageErrorf("--depth bounds the walk from --root; give --root too")
				}
				params.Depth = &depth
			}
			c, err := sf.connect(cmd)
			if err != nil {
				return err
			}
			resp, err := c.GetCatalogLineageWithResponse(cmd.Context(), params)
			if err != nil {
				return err
			}
			if resp.JSON200 == nil {
				return sf.apiError(resp.HTTPResponse, resp.Body)
			}
			g := resp.JSON200
			if g.Truncated {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning: the graph has more edges than the server returns; these are the newest")
			}
			w := cmd.OutOrStdout()
			switch format {
			case "json":
				return printJSON(w, g)
			case "dot":
				return printDOT(w, g.Edges)
			}
			for _, e := range g.Edges {
				if _, err := fmt.Fprintf(w, "%s -> %s  (pipeline %s, %d run(s), %d records last)\n", e.SrcUri, e.DstUri, e.Pipeline, e.Runs, e.LastRecords); err != nil {
					return err
				}
			}
			return nil
		},
	}
	out = addOutputFlags(cmd)
	cmd.Flags().StringVar(&root, "root", "", "dataset id to start from (faucet catalog datasets lists them)")
	cmd.Flags().Int64Var(&depth, "depth", 5, "hops around --root, 1 to 32")
	cmd.Flags().Var(&format, "format", "text, dot (Graphviz) or json")
	return cmd
}

// printDOT writes the edges as a Graphviz digraph: a node per dataset,
// named by its id and labelled with its URI.
func printDOT(w io.Writer, edges []client.CatalogLineageEdge) error {
	var b strings.Builder
	b.WriteString("digraph lineage {\n  rankdir=LR;\n  node [shape=box, fontname=\"monospace\"];\n")
	seen := map[string]bool{}
	node := func(id, uri string) {
		if !seen[id] {
			seen[id] = true
			fmt.Fprintf(&b, "  %s [label=%s];\n", dotQuote(id), dotQuote(uri))
		}
	}
	for _, e := range edges {
		node(e.SrcId, e.SrcUri)
		node(e.DstId, e.DstUri)
	}
	for _, e := range edges {
		fmt.Fprintf(&b, "  %s -> %s [label=%s];\n", dotQuote(e.SrcId), dotQuote(e.DstId), dotQuote(fmt.Sprintf("%s (%d)", e.Pipeline, e.Runs)))
	}
	b.WriteString("}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// dotQuote is s as a DOT quoted string: backslashes and quotes escaped,
// line breaks as \n.
func dotQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", "")
	return `"` + r.Replace(s) + `"`
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
