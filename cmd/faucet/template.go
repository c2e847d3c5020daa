package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/faucet-dev/faucet/openapi/client"
)

func newTemplateCmd() *cobra.Command {
	sf := &serverFlags{}
	cmd := &cobra.Command{
		Use:   "template",
		Short: "Register pipeline templates on a faucet serve, release their versions, and run them",
		Long: `Talk to a running faucet serve's template registry. A template is a pipeline
config registered once under an id, in numbered versions that never change,
with params a run supplies (params: {NAME: {type, required, default, secret,
description}} in the config, ${param.NAME} where a value goes). Registering
a version moves nobody: a run that names no version uses the launched one
(stable) until another is launched. VERSION is a number or a channel: stable,
previous, newest (derived), dev, test, staging, pre-prod, canary, prod
(assigned with promote).

--server defaults to $FAUCET_SERVER or ` + defaultServer + ` (a bare host:port means
http); --token defaults to $FAUCET_TOKEN.`,
	}
	sf.register(cmd, true)
	cmd.AddCommand(sf.templateRegisterCmd(), sf.templateListCmd(), sf.templateShowCmd(), sf.templateLaunchCmd(),
		sf.templateRollbackCmd(), sf.templatePromoteCmd(), sf.templateDeprecateCmd(), sf.templateRunCmd(), sf.templateDeleteCmd())
	return cmd
}

// selector is VERSION as the API takes it in a body.
func selector(raw string) *client.VersionSelector {
	var v client.VersionSelector
	if n, err := strconv.Atoi(raw); err == nil {
		_ = v.FromVersionSelector1(n)
	} else {
		_ = v.FromVersionSelector0(raw)
	}
	return &v
}

func (sf *serverFlags) templateRegisterCmd() *cobra.Command {
	var (
		id, description, format string
		tags                    []string
		launch                  bool
		out                     *outputFormat
	)
	cmd := &cobra.Command{
		Use:   "register FILE",
		Short: "Register a config as a template's next version (FILE - reads stdin)",
		Long: `Register a config as a template's next version. The id is the config's name
made a slug (Tenant Sync: tenant-sync) unless --id gives one. The server
checks the config as a pipeline, its params filled with placeholders, and
stores it exactly as written.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format == "" {
				format = "yaml"
				if strings.HasSuffix(args[0], ".json") {
					format = "json"
				}
			}
			if format != "yaml" && format != "json" {
				return usageErrorf("--format %q: want yaml or json", format)
			}
			var data []byte
			var err error
			if args[0] == "-" {
				data, err = io.ReadAll(cmd.InOrStdin())
			} else {
				data, err = os.ReadFile(args[0])
			}
			if err != nil {
				return fmt.Errorf("read config: %w", err)
			}
			f := client.ConfigFormat(format)
			body := client.RegisterTemplateRequest{Config: string(data), ConfigFormat: &f}
			if id != "" {
				body.Id = &id
			}
			if description != "" {
				body.Description = &description
			}
			if len(tags) > 0 {
				ts := make([]client.VersionChannel, len(tags))
				for i, t := range tags {
					ts[i] = client.VersionChannel(t)
				}
				body.Tags = &ts
			}
			if launch {
				body.Launch = &launch
			}
			c, err := sf.connect(cmd)
			if err != nil {
				return err
			}
			resp, err := c.RegisterTemplateWithResponse(cmd.Context(), body)
			if err != nil {
				return err
			}
			if resp.JSON201 == nil {
				return sf.apiError(resp.HTTPResponse, resp.Body)
			}
			if *out == outputJSON {
				return printJSON(cmd.OutOrStdout(), resp.JSON201)
			}
			msg := "registered"
			if launch {
				msg = "registered and launched"
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "template %s version %d %s\n", resp.JSON201.Id, resp.JSON201.Version, msg)
			return err
		},
	}
	out = addOutputFlags(cmd)
	cmd.Flags().StringVar(&id, "id", "", "template id (default: from the config's name)")
	cmd.Flags().StringVar(&description, "description", "", "what the template does (default: the previous version's)")
	cmd.Flags().StringVar(&format, "format", "", "config format, yaml or json (default: from the file extension)")
	cmd.Flags().StringArrayVar(&tags, "tag", nil, "channel to point at the new version: dev, test, staging, pre-prod, canary or prod (repeatable)")
	cmd.Flags().BoolVar(&launch, "launch", false, "launch the new version: runs that name no version use it")
	return cmd
}

func (sf *serverFlags) templateListCmd() *cobra.Command {
	var (
		deprecated bool
		out        *outputFormat
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List templates, newest registered first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := sf.connect(cmd)
			if err != nil {
				return err
			}
			resp, err := c.ListTemplatesWithResponse(cmd.Context(), &client.ListTemplatesParams{IncludeDeprecated: &deprecated})
			if err != nil {
				return err
			}
			if resp.JSON200 == nil {
				return sf.apiError(resp.HTTPResponse, resp.Body)
			}
			if *out == outputJSON {
				return printJSON(cmd.OutOrStdout(), resp.JSON200.Templates)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSTATUS\tSTABLE\tNEWEST\tCHANNELS\tNAME")
			for _, t := range resp.JSON200.Templates {
				st := client.TemplateState{Status: "draft"}
				if t.State != nil {
					st = *t.State
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", t.Id, st.Status, versionText(st.Stable), t.Version, channels(st.Tags), orDash(t.Name))
			}
			return tw.Flush()
		},
	}
	out = addOutputFlags(cmd)
	cmd.Flags().BoolVar(&deprecated, "include-deprecated", false, "list deprecated templates too")
	return cmd
}

func versionText(v *int64) string {
	if v == nil {
		return "-"
	}
	return strconv.FormatInt(*v, 10)
}

// channels renders channel pointers as dev=2,prod=1, in promotion order.
func channels(tags map[string]int64) string {
	order := []string{"dev", "test", "staging", "pre-prod", "canary", "prod"}
	names := make([]string, 0, len(tags))
	for k := range tags {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool { return indexOf(order, names[i]) < indexOf(order, names[j]) })
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s=%d", n, tags[n])
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ",")
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return len(list)
}

func (sf *serverFlags) templateShowCmd() *cobra.Command {
	var (
		version string
		out     *outputFormat
	)
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Print a template version (stable unless --version says otherwise) with its release state and body",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := sf.connect(cmd)
			if err != nil {
				return err
			}
			params := &client.GetTemplateParams{}
			if version != "" {
				params.Version = &version
			}
			resp, err := c.GetTemplateWithResponse(cmd.Context(), args[0], params)
			if err != nil {
				return err
			}
			if resp.JSON200 == nil {
				return sf.apiError(resp.HTTPResponse, resp.Body)
			}
			if *out == outputJSON {
				return printJSON(cmd.OutOrStdout(), resp.JSON200)
			}
			return printTemplate(cmd.OutOrStdout(), resp.JSON200)
		},
	}
	out = addOutputFlags(cmd)
	cmd.Flags().StringVar(&version, "version", "", "the version: a number or a channel (default stable; newest for a draft)")
	return cmd
}

// printTemplate prints a template version the way a person reads it.
func printTemplate(w io.Writer, d *client.TemplateDetail) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "template:\t%s\n", d.Id)
	fmt.Fprintf(tw, "version:\t%d (registered %s by %s)\n", d.Version, d.CreatedAt.Format(time.RFC3339), orDash(d.CreatedBy))
	if d.Name != nil {
		fmt.Fprintf(tw, "name:\t%s\n", *d.Name)
	}
	if d.Description != nil {
		fmt.Fprintf(tw, "description:\t%s\n", *d.Description)
	}
	status := string(d.Status)
	if d.Deprecation != nil && d.Deprecation.Reason != nil {
		status += ": " + *d.Deprecation.Reason
	}
	fmt.Fprintf(tw, "status:\t%s\n", status)
	fmt.Fprintf(tw, "stable:\t%s\n", versionText(d.Stable))
	fmt.Fprintf(tw, "previous:\t%s\n", versionText(d.Previous))
	fmt.Fprintf(tw, "newest:\t%s\n", versionText(d.Newest))
	fmt.Fprintf(tw, "channels:\t%s\n", channels(d.Tags))
	vs := make([]string, len(d.Versions))
	for i, v := range d.Versions {
		vs[i] = strconv.FormatInt(v, 10)
	}
	fmt.Fprintf(tw, "versions:\t%s\n", strings.Join(vs, " "))
	for _, vd := range d.VersionDeprecations {
		fmt.Fprintf(tw, "deprecated:\tversion %d: %s\n", vd.Version, orDash(vd.Reason))
	}
	names := make([]string, 0, len(d.Params))
	for n := range d.Params {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := d.Params[n]
		desc := string(p.Type)
		switch {
		case p.Required:
			desc += ", required"
		case p.Default != nil && !p.Secret:
			desc += fmt.Sprintf(", default %v", p.Default)
		}
		if p.Secret {
			desc += ", secret"
		}
		if p.Description != nil {
			desc += ": " + *p.Description
		}
		fmt.Fprintf(tw, "param %s:\t%s\n", n, desc)
	}
	for _, l := range d.Launches {
		fmt.Fprintf(tw, "launch %d:\tversion %d at %s by %s\n", l.Seq, l.Version, l.LaunchedAt.Format(time.RFC3339), orDash(l.LaunchedBy))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "---\n%s", d.Body)
	if err == nil && !strings.HasSuffix(d.Body, "\n") {
		_, err = fmt.Fprintln(w)
	}
	return err
}

// launched prints the result of a launch or rollback.
func launched(cmd *cobra.Command, format outputFormat, l *client.LaunchResponse) error {
	if format == outputJSON {
		return printJSON(cmd.OutOrStdout(), l)
	}
	var msg string
	switch {
	case l.AlreadyLaunched:
		msg = fmt.Sprintf("template %s version %d was live already", l.Id, l.Version)
	case l.Replaced != nil:
		msg = fmt.Sprintf("template %s version %d is live (replacing version %d)", l.Id, l.Version, *l.Replaced)
	default:
		msg = fmt.Sprintf("template %s version %d is live", l.Id, l.Version)
	}
	_, err := fmt.Fprintln(cmd.OutOrStdout(), msg)
	return err
}

func (sf *serverFlags) templateLaunchCmd() *cobra.Command {
	return sf.launchCmd("launch ID [VERSION]", "Make a template version the live one (default: the newest)", cobra.RangeArgs(1, 2),
		func(cmd *cobra.Command, c *client.ClientWithResponses, args []string) (*client.LaunchResponse, *http.Response, []byte, error) {
			body := client.LaunchTemplateRequest{}
			if len(args) == 2 {
				body.Version = selector(args[1])
			}
			resp, err := c.LaunchTemplateWithResponse(cmd.Context(), args[0], body)
			if err != nil {
				return nil, nil, nil, err
			}
			return resp.JSON200, resp.HTTPResponse, resp.Body, nil
		})
}

func (sf *serverFlags) templateRollbackCmd() *cobra.Command {
	return sf.launchCmd("rollback ID", "Launch the version that was live before the current one", cobra.ExactArgs(1),
		func(cmd *cobra.Command, c *client.ClientWithResponses, args []string) (*client.LaunchResponse, *http.Response, []byte, error) {
			resp, err := c.RollbackTemplateWithResponse(cmd.Context(), args[0])
			if err != nil {
				return nil, nil, nil, err
			}
			return resp.JSON200, resp.HTTPResponse, resp.Body, nil
		})
}

// launchCmd is a command whose call launches a version (launch, rollback)
// and prints the outcome.
func (sf *serverFlags) launchCmd(use, short string, args cobra.PositionalArgs,
	call func(*cobra.Command, *client.ClientWithResponses, []string) (*client.LaunchResponse, *http.Response, []byte, error),
) *cobra.Command {
	var out *outputFormat
	cmd := &cobra.Command{
		Use: use, Short: short, Args: args,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := sf.connect(cmd)
			if err != nil {
				return err
			}
			l, resp, body, err := call(cmd, c, args)
			if err != nil {
				return err
			}
			if l == nil {
				return sf.apiError(resp, body)
			}
			return launched(cmd, *out, l)
		},
	}
	out = addOutputFlags(cmd)
	return cmd
}

func (sf *serverFlags) templatePromoteCmd() *cobra.Command {
	var out *outputFormat
	cmd := &cobra.Command{
		Use:   "promote ID CHANNEL [VERSION]",
		Short: "Point a channel (dev, test, staging, pre-prod, canary, prod) at a version (default: stable)",
		Args:  cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := sf.connect(cmd)
			if err != nil {
				return err
			}
			body := client.PromoteTemplateRequest{Tag: client.VersionChannel(args[1])}
			if len(args) == 3 {
				body.Version = selector(args[2])
			}
			resp, err := c.PromoteTemplateWithResponse(cmd.Context(), args[0], body)
			if err != nil {
				return err
			}
			if resp.JSON200 == nil {
				return sf.apiError(resp.HTTPResponse, resp.Body)
			}
			if *out == outputJSON {
				return printJSON(cmd.OutOrStdout(), resp.JSON200)
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "template %s channel %s is version %d\n", resp.JSON200.Id, resp.JSON200.Tag, resp.JSON200.Version)
			return err
		},
	}
	out = addOutputFlags(cmd)
	return cmd
}

func (sf *serverFlags) templateDeprecateCmd() *cobra.Command {
	var (
		version, reason string
		undo            bool
		out             *outputFormat
	)
	cmd := &cobra.Command{
		Use:   "deprecate ID",
		Short: "Deprecate a template, or one version of it: runs and launches of it are refused",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := sf.connect(cmd)
			if err != nil {
				return err
			}
			body := client.DeprecateTemplateRequest{}
			if version != "" {
				body.Version = selector(version)
			}
			if reason != "" {
				body.Reason = &reason
			}
			if undo {
				body.Undo = &undo
			}
			resp, err := c.DeprecateTemplateWithResponse(cmd.Context(), args[0], body)
			if err != nil {
				return err
			}
			if resp.JSON200 == nil {
				return sf.apiError(resp.HTTPResponse, resp.Body)
			}
			if *out == outputJSON {
				return printJSON(cmd.OutOrStdout(), resp.JSON200)
			}
			what := "template " + resp.JSON200.Id
			if v := resp.JSON200.Version; v != nil {
				what = fmt.Sprintf("version %d of template %s", *v, resp.JSON200.Id)
			}
			verb := "deprecated"
			if undo {
				verb = "revived"
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s %s; the template is %s\n", what, verb, resp.JSON200.Status)
			return err
		},
	}
	out = addOutputFlags(cmd)
	cmd.Flags().StringVar(&version, "version", "", "deprecate just this version (a number or a channel)")
	cmd.Flags().StringVar(&reason, "reason", "", "why: refused runs name it")
	cmd.Flags().BoolVar(&undo, "undo", false, "revive instead")
	return cmd
}

func (sf *serverFlags) templateRunCmd() *cobra.Command {
	var (
		version, name, key string
		params, labels     []string
		timeout            int64
		doctor, wait       bool
		out                *outputFormat
	)
	cmd := &cobra.Command{
		Use:   "run ID",
		Short: "Run a template version (default: stable) with params",
		Long: `Run a template version with params. --param name=value is repeatable; the
server converts each value to the param's declared type. With --wait, run
follows the run to its end and exits non-zero unless it completed.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			body := client.TriggerTemplateRequest{}
			if len(params) > 0 {
				m := map[string]any{}
				for _, p := range params {
					k, v, ok := strings.Cut(p, "=")
					if !ok || k == "" {
						return usageErrorf("--param %q: want name=value", p)
					}
					if _, dup := m[k]; dup {
						return usageErrorf("--param %s is given twice", k)
					}
					m[k] = v
				}
				body.Params = &m
			}
			var err error
			if body.Labels, err = labelFlags(labels); err != nil {
				return err
			}
			if version != "" {
				body.Version = selector(version)
			}
			if name != "" {
				body.Name = &name
			}
			if key != "" {
				body.IdempotencyKey = &key
			}
			if timeout > 0 {
				body.TimeoutSecs = &timeout
			}
			if doctor {
				body.DoctorFirst = &doctor
			}
			c, err := sf.connect(cmd)
			if err != nil {
				return err
			}
			resp, err := c.TriggerTemplateWithResponse(cmd.Context(), args[0], body)
			if err != nil {
				return err
			}
			if resp.StatusCode() != http.StatusAccepted || resp.JSON202 == nil {
				return sf.apiError(resp.HTTPResponse, resp.Body)
			}
			tr := resp.JSON202
			for _, w := range derefSlice(tr.Warnings) {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
			}
			if !wait {
				if *out == outputJSON {
					return printJSON(cmd.OutOrStdout(), tr)
				}
				_, err := fmt.Fprintf(cmd.OutOrStdout(), "run %s %s (template %s version %d)\n", tr.RunId, tr.Status, tr.TemplateId, tr.TemplateVersion)
				return err
			}
			rec, err := sf.await(cmd.Context(), c, tr.RunId)
			if err != nil {
				return err
			}
			if err := printRun(cmd.OutOrStdout(), *out, rec); err != nil {
				return err
			}
			if rec.Status != client.RunStatusCompleted {
				return fmt.Errorf("run %s %s", rec.RunId, rec.Status)
			}
			return nil
		},
	}
	out = addOutputFlags(cmd)
	cmd.Flags().StringArrayVar(&params, "param", nil, "param name=value (repeatable)")
	cmd.Flags().StringVar(&version, "version", "", "the version: a number or a channel (default stable)")
	cmd.Flags().StringVar(&name, "name", "", "display name of the run (default: the config's name)")
	cmd.Flags().StringVar(&key, "idempotency-key", "", "idempotency key: repeating the same trigger returns the same run")
	cmd.Flags().StringArrayVar(&labels, "label", nil, "label key=value (repeatable)")
	cmd.Flags().Int64Var(&timeout, "timeout-secs", 0, "fail the run when it executes longer than this")
	cmd.Flags().BoolVar(&doctor, "doctor-first", false, "probe every connector before queueing the run")
	cmd.Flags().BoolVar(&wait, "wait", false, "wait for the run to finish; exit non-zero unless it completed")
	return cmd
}

// templateDeleteResult is what template delete prints with --output json.
type templateDeleteResult struct {
	ID      string  `json:"id"`
	Version *string `json:"version,omitempty"`
	Deleted bool    `json:"deleted"`
}

func (sf *serverFlags) templateDeleteCmd() *cobra.Command {
	var (
		version string
		out     *outputFormat
	)
	cmd := &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a template, or one version with the channels and launches that point at it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := sf.connect(cmd)
			if err != nil {
				return err
			}
			params := &client.DeleteTemplateParams{}
			res := templateDeleteResult{ID: args[0], Deleted: true}
			if version != "" {
				params.Version, res.Version = &version, &version
			}
			resp, err := c.DeleteTemplateWithResponse(cmd.Context(), args[0], params)
			if err != nil {
				return err
			}
			if resp.StatusCode() != http.StatusNoContent {
				return sf.apiError(resp.HTTPResponse, resp.Body)
			}
			if *out == outputJSON {
				return printJSON(cmd.OutOrStdout(), res)
			}
			what := "template " + args[0]
			if version != "" {
				what = "version " + version + " of template " + args[0]
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), what, "deleted")
			return err
		},
	}
	out = addOutputFlags(cmd)
	cmd.Flags().StringVar(&version, "version", "", "delete just this version (a number or a channel)")
	return cmd
}
