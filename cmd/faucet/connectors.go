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

	"github.com/faucet-dev/faucet/plugins/builtin"
	"github.com/faucet-dev/faucet/plugins/host"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// pluginFlags are the flags of every command that starts the connectors.
type pluginFlags struct {
	dirs    []string
	env     []string
	verbose bool
}

// pluginEnvUsage explains --plugin-env: plugins start with a clean
// environment, so whatever a connector needs from it is passed explicitly.
const pluginEnvUsage = "environment variable passed to connector plugins, NAME=value or NAME to copy faucet's own (repeatable); plugins get nothing else beyond PATH, HOME, TMPDIR, TZ, LANG, LC_ALL, USER and GOMAXPROCS=1 (which this may override)"

func (f *pluginFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.dirs, "plugin-dir", nil, "a directory of connector plugins, searched before $"+host.PluginDirEnv+" and the default (repeatable)")
	cmd.Flags().StringArrayVar(&f.env, "plugin-env", nil, pluginEnvUsage)
	cmd.Flags().BoolVarP(&f.verbose, "verbose", "v", false, "log each invocation and the connectors' own output")
}

// open discovers the connectors (the built-ins and the plugins in the plugin
// directories) and starts their host, logging to logs. The caller closes it,
// which stops every plugin process.
func (f *pluginFlags) open(ctx context.Context, logs io.Writer) (*host.Host, *slog.Logger, error) {
	level := slog.LevelWarn
	if f.verbose {
		level = slog.LevelDebug
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
	}
	cmd.AddCommand(newConnectorsListCmd(), newConnectorsSpecCmd())
	return cmd
}

func newConnectorsListCmd() *cobra.Command {
	var pf pluginFlags
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the built-in connectors and the plugins found in the plugin directories",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, _, err := pf.open(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer h.Close()
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tROLES\tVERSION\tSHARDABLE\tWRITE MODES\tFROM\tDESCRIPTION")
			for _, c := range h.Connectors() {
				from := c.Path
				if c.Builtin {
					from = "built-in"
				}
				modes := strings.Join(c.WriteModes, ", ")
				if modes == "" {
					modes = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, strings.Join(roles(c), ", "), c.Version, yesNo(c.Shardable), modes, from, c.Description)
			}
			return tw.Flush()
		},
	}
	pf.register(cmd)
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

// connectorSpec is how `faucet connectors spec` prints a connector.
type connectorSpec struct {
	Name         string          `json:"name"`
	Version      string          `json:"version"`
	Description  string          `json:"description,omitempty"`
	Roles        []string        `json:"roles"`
	Shardable    bool            `json:"shardable"`
	WriteModes   []string        `json:"write_modes,omitempty"`
	Path         string          `json:"path,omitempty"`
	SourceSchema json.RawMessage `json:"source_schema,omitempty"`
	SinkSchema   json.RawMessage `json:"sink_schema,omitempty"`
}

func newConnectorsSpecCmd() *cobra.Command {
	var pf pluginFlags
	cmd := &cobra.Command{
		Use:   "spec NAME",
		Short: "Print a connector's spec as JSON, with the JSON Schema of its config per role",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, _, err := pf.open(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer h.Close()
			c, ok := h.Lookup(args[0])
			if !ok {
				var names []string
				for _, c := range h.Connectors() {
					names = append(names, c.Name)
				}
				return fmt.Errorf("no connector %q (known: %s)", args[0], strings.Join(names, ", "))
			}
			spec := connectorSpec{Name: c.Name, Version: c.Version, Description: c.Description, Roles: roles(c),
				Shardable: c.Shardable, WriteModes: c.WriteModes}
			if !c.Builtin {
				spec.Path = c.Path
			}
			if c.Source {
				spec.SourceSchema = c.SourceSchema
			}
			if c.Sink {
				spec.SinkSchema = c.SinkSchema
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			enc.SetEscapeHTML(false)
			return enc.Encode(spec)
		},
	}
	pf.register(cmd)
	return cmd
}
