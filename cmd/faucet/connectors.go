package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/faucet-dev/faucet/openapi/client"
	"github.com/faucet-dev/faucet/pipeline/scaffold"
	"github.com/faucet-dev/faucet/plugins/builtin"
	"github.com/faucet-dev/faucet/plugins/host"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// pluginFlags are the flags of every command that starts the connectors.
type pluginFlags struct {
	dirs     []string
	env      []string
	verbose  bool
	logLevel string
}

// pluginEnvUsage explains --plugin-env: plugins start with a clean
// environment, so whatever a connector needs from it is passed explicitly.
const pluginEnvUsage = "environment variable passed to connector plugins, NAME=value or NAME to copy faucet's own (repeatable); plugins get nothing else beyond PATH, HOME, TMPDIR, TZ, LANG, LC_ALL, USER and GOMAXPROCS=1 (which this may override)"

func (f *pluginFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.dirs, "plugin-dir", nil, "a directory of connector plugins, searched before $"+host.PluginDirEnv+" and the default (repeatable)")
	cmd.Flags().StringArrayVar(&f.env, "plugin-env", nil, pluginEnvUsage)
	cmd.Flags().BoolVarP(&f.verbose, "verbose", "v", false, "log each invocation and the connectors' own output (--log-level info)")
	cmd.Flags().StringVar(&f.logLevel, "log-level", "", "log level: "+logLevels+" (default warn, or info with -v; debug adds the plugin processes' start and exit)")
}

// level is the log level the flags ask for.
func (f *pluginFlags) level() (slog.Level, error) {
	switch {
	case f.logLevel != "":
		return parseLogLevel(f.logLevel)
	case f.verbose:
		return slog.LevelInfo, nil
	}
	return slog.LevelWarn, nil
}

// open discovers the connectors (the built-ins and the plugins in the plugin
// directories) and starts their host, logging to logs. The caller closes it,
// which stops every plugin process.
func (f *pluginFlags) open(ctx context.Context, logs io.Writer) (*host.Host, *slog.Logger, error) {
	level, err := f.level()
	if err != nil {
		return nil, nil, err
	}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: level}))
	var specs []sdk.Spec
	for _, c := range builtin.All() {
		specs = append(specs, c.Spec())
	}
	h, err := host.New(ctx, host.Options{
		PluginDirs: append(slices.Clone(f.dirs), host.DefaultPluginDirs()...),
		Builtins:   specs,
		Env:        f.env,
		Logger:     log,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("start connectors: %w", err)
	}
	return h, log, nil
}

func newConnectorsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "connectors",
		Short: "List the available connectors and show their config schemas",
		Long: `List the available connectors and show their config schemas: those this
faucet finds (built in, or in the plugin directories), or with --server those
a faucet serve offers.`,
	}
	cmd.AddCommand(newConnectorsListCmd(), newConnectorsSpecCmd())
	return cmd
}

// connectorSpec is how the connectors commands print a connector. What a
// server's catalog does not say (version, capabilities) stays empty there.
type connectorSpec struct {
	Name         string          `json:"name"`
	Version      string          `json:"version,omitempty"`
	Description  string          `json:"description,omitempty"`
	Roles        []string        `json:"roles"`
	Shardable    bool            `json:"shardable"`
	WriteModes   []string        `json:"write_modes,omitempty"`
	Builtin      bool            `json:"builtin,omitempty"`
	Path         string          `json:"path,omitempty"`
	SourceSchema json.RawMessage `json:"source_schema,omitempty"`
	SinkSchema   json.RawMessage `json:"sink_schema,omitempty"`
}

func specOf(c host.Connector) connectorSpec {
	spec := connectorSpec{Name: c.Name, Version: c.Version, Description: c.Description, Roles: roles(c),
		Shardable: c.Shardable, WriteModes: c.WriteModes, Builtin: c.Builtin}
	if !c.Builtin {
		spec.Path = c.Path
	}
	if c.Source {
		spec.SourceSchema = c.SourceSchema
	}
	if c.Sink {
		spec.SinkSchema = c.SinkSchema
	}
	return spec
}

// connectorSource is where the connectors commands find connectors: this
// faucet's own, or with --server those of a faucet serve.
type connectorSource struct {
	pf pluginFlags
	sf serverFlags
}

func (cs *connectorSource) register(cmd *cobra.Command) {
	cs.pf.register(cmd)
	cs.sf.register(cmd, false)
	// Here --server chooses where to look, so it has no default and no
	// variable: FAUCET_SERVER alone does not send these commands away.
	f := cmd.Flags().Lookup("server")
	f.Usage = "ask this faucet serve (host:port or URL) for its connectors instead of looking here"
	f.DefValue = ""
}

// remote reports whether --server was given.
func (cs *connectorSource) remote(cmd *cobra.Command) bool { return cmd.Flags().Changed("server") }

// list returns every connector, sorted by name.
func (cs *connectorSource) list(cmd *cobra.Command) ([]connectorSpec, error) {
	if cs.remote(cmd) {
		return cs.remoteList(cmd)
	}
	h, _, err := cs.pf.open(cmd.Context(), cmd.ErrOrStderr())
	if err != nil {
		return nil, err
	}
	defer h.Close()
	var out []connectorSpec
	for _, c := range h.Connectors() {
		out = append(out, specOf(c))
	}
	return out, nil
}

// remoteList reads the server's catalog (GET /v1/schemas).
func (cs *connectorSource) remoteList(cmd *cobra.Command) ([]connectorSpec, error) {
	c, err := cs.sf.connect(cmd)
	if err != nil {
		return nil, err
	}
	resp, err := c.ListSchemasWithResponse(cmd.Context())
	if err != nil {
		return nil, err
	}
	if resp.JSON200 == nil {
		return nil, cs.sf.apiError(resp.HTTPResponse, resp.Body)
	}
	byName := map[string]*connectorSpec{}
	add := func(list []client.ConnectorSummary, role string) {
		for _, s := range list {
			spec := byName[s.Name]
			if spec == nil {
				spec = &connectorSpec{Name: s.Name}
				byName[s.Name] = spec
			}
			if s.Description != nil {
				spec.Description = *s.Description
			}
			spec.Roles = append(spec.Roles, role)
		}
	}
	add(resp.JSON200.Sources, "source")
	add(resp.JSON200.Sinks, "sink")
	out := make([]connectorSpec, 0, len(byName))
	for _, spec := range byName {
		out = append(out, *spec)
	}
	slices.SortFunc(out, func(a, b connectorSpec) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// spec returns one connector with its config schemas.
func (cs *connectorSource) spec(cmd *cobra.Command, name string) (connectorSpec, error) {
	if !cs.remote(cmd) {
		h, _, err := cs.pf.open(cmd.Context(), cmd.ErrOrStderr())
		if err != nil {
			return connectorSpec{}, err
		}
		defer h.Close()
		c, ok := h.Lookup(name)
		if !ok {
			var names []string
			for _, c := range h.Connectors() {
				names = append(names, c.Name)
			}
			return connectorSpec{}, fmt.Errorf("no connector %q (known: %s)", name, strings.Join(names, ", "))
		}
		return specOf(c), nil
	}
	all, err := cs.remoteList(cmd)
	if err != nil {
		return connectorSpec{}, err
	}
	i := slices.IndexFunc(all, func(s connectorSpec) bool { return s.Name == name })
	if i < 0 {
		var names []string
		for _, s := range all {
			names = append(names, s.Name)
		}
		return connectorSpec{}, fmt.Errorf("the server has no connector %q (known: %s)", name, strings.Join(names, ", "))
	}
	spec := all[i]
	c, err := cs.sf.connect(cmd)
	if err != nil {
		return connectorSpec{}, err
	}
	for _, role := range spec.Roles {
		resp, err := c.GetSchemaWithResponse(cmd.Context(), client.GetSchemaParamsKind(role), name)
		if err != nil {
			return connectorSpec{}, err
		}
		if resp.JSON200 == nil {
			return connectorSpec{}, cs.sf.apiError(resp.HTTPResponse, resp.Body)
		}
		if role == "source" {
			spec.SourceSchema = resp.Body
		} else {
			spec.SinkSchema = resp.Body
		}
	}
	return spec, nil
}

// completeNames completes a connector name.
func (cs *connectorSource) completeNames(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	all, err := cs.list(cmd)
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	var out []string
	for _, s := range all {
		if strings.HasPrefix(s.Name, prefix) {
			out = append(out, s.Name+"\t"+s.Description)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

func newConnectorsListCmd() *cobra.Command {
	var (
		cs  connectorSource
		out *outputFormat
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the built-in connectors and the plugins found in the plugin directories (or a server's, with --server)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			all, err := cs.list(cmd)
			if err != nil {
				return err
			}
			if *out == outputJSON {
				for i := range all {
					all[i].SourceSchema, all[i].SinkSchema = nil, nil
				}
				return printJSON(cmd.OutOrStdout(), all)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			if cs.remote(cmd) {
				fmt.Fprintln(tw, "NAME\tROLES\tDESCRIPTION")
				for _, c := range all {
					fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Name, strings.Join(c.Roles, ", "), c.Description)
				}
				return tw.Flush()
			}
			fmt.Fprintln(tw, "NAME\tROLES\tVERSION\tSHARDABLE\tWRITE MODES\tFROM\tDESCRIPTION")
			for _, c := range all {
				from := c.Path
				if c.Builtin {
					from = "built-in"
				}
				modes := strings.Join(c.WriteModes, ", ")
				if modes == "" {
					modes = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, strings.Join(c.Roles, ", "), c.Version, yesNo(c.Shardable), modes, from, c.Description)
			}
			return tw.Flush()
		},
	}
	cs.register(cmd)
	out = addOutputFlags(cmd)
	return cmd
}

func roles(c host.Connector) []string {
	var out []string
	if c.Source {
		out = append(out, "source")
	}
	if c.Sink {
		out = append(out, "sink")
	}
	return out
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func newConnectorsSpecCmd() *cobra.Command {
	var (
		cs  connectorSource
		out *outputFormat
	)
	cmd := &cobra.Command{
		Use:   "spec NAME",
		Short: "Show a connector's spec and the config it accepts per role (--output json: with its JSON Schemas)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, err := cs.spec(cmd, args[0])
			if err != nil {
				return err
			}
			if *out == outputJSON {
				return printJSON(cmd.OutOrStdout(), spec)
			}
			return printSpec(cmd.OutOrStdout(), spec)
		},
	}
	cs.register(cmd)
	cmd.ValidArgsFunction = cs.completeNames
	out = addOutputFlags(cmd)
	return cmd
}

// printSpec shows a connector for a person: what it is, then each role's
// config fields with their types and descriptions.
func printSpec(w io.Writer, spec connectorSpec) error {
	title := spec.Name
	if spec.Version != "" {
		title += " " + spec.Version
	}
	fmt.Fprintln(w, title)
	if spec.Description != "" {
		fmt.Fprintln(w, "  "+spec.Description)
	}
	fmt.Fprintf(w, "  roles: %s", strings.Join(spec.Roles, ", "))
	if spec.Version != "" {
		fmt.Fprintf(w, "; shardable: %s", yesNo(spec.Shardable))
	}
	if len(spec.WriteModes) > 0 {
		fmt.Fprintf(w, "; write modes: %s", strings.Join(spec.WriteModes, ", "))
	}
	fmt.Fprintln(w)
	for _, side := range []struct {
		role   string
		schema json.RawMessage
	}{{"source", spec.SourceSchema}, {"sink", spec.SinkSchema}} {
		if len(side.schema) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s config:\n", side.role)
		fields := scaffold.Fields(side.schema)
		if len(fields) == 0 {
			fmt.Fprintln(w, "  (no fields)")
			continue
		}
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		for _, f := range fields {
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", f.Name, f.Kind, f.Describe())
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}
