package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/faucet-dev/faucet/openapi/client"
)

func newAuditCmd() *cobra.Command {
	var (
		sf                serverFlags
		principal, action string
		since, until      string
		limit             int64
		out               *outputFormat
	)
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Show a faucet serve's audit log (admin): every mutating request and every denial, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			params := &client.ListAuditParams{}
			if principal != "" {
				params.Principal = &principal
			}
			if action != "" {
				params.Action = &action
			}
			for _, t := range []struct {
				flag, value string
				into        **time.Time
			}{{"since", since, &params.Since}, {"until", until, &params.Until}} {
				if t.value == "" {
					continue
				}
				ts, err := time.Parse(time.RFC3339, t.value)
				if err != nil {
					return usageErrorf("--%s %q: want an RFC 3339 time, such as 2026-01-02T15:04:05Z", t.flag, t.value)
				}
				*t.into = &ts
			}
			if limit > 0 {
				params.Limit = &limit
			}
			c, err := sf.connect(cmd)
			if err != nil {
				return err
			}
			resp, err := c.ListAuditWithResponse(cmd.Context(), params)
			if err != nil {
				return err
			}
			if resp.JSON200 == nil {
				return sf.apiError(resp.HTTPResponse, resp.Body)
			}
			entries := resp.JSON200.Entries
			if *out == outputJSON {
				return printJSON(cmd.OutOrStdout(), entries)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "TIME\tPRINCIPAL\tROLE\tACTION\tRESULT\tRUN ID\tSOURCE IP")
			for _, e := range entries {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", e.Timestamp.Format(time.RFC3339), e.Principal, e.Role, e.Action, e.Result, orDash(e.RunId), orDash(e.SourceIp))
			}
			return tw.Flush()
		},
	}
	sf.register(cmd, false)
	out = addOutputFlags(cmd)
	cmd.Flags().StringVar(&principal, "principal", "", "only entries of this principal")
	cmd.Flags().StringVar(&action, "action", "", "only entries of this action (run.submit, run.cancel, run.delete, or a denied operation)")
	cmd.Flags().StringVar(&since, "since", "", "only entries at or after this time (RFC 3339)")
	cmd.Flags().StringVar(&until, "until", "", "only entries before this time (RFC 3339)")
	cmd.Flags().Int64Var(&limit, "limit", 0, "at most this many entries (server default)")
	return cmd
}

func orDash(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	return *s
}

func newWhoamiCmd() *cobra.Command {
	var (
		sf  serverFlags
		out *outputFormat
	)
	cmd := &cobra.Command{
		Use:   "whoami",
		Short: "Show which principal and role a faucet serve sees for your token",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := sf.connect(cmd)
			if err != nil {
				return err
			}
			resp, err := c.WhoamiWithResponse(cmd.Context())
			if err != nil {
				return err
			}
			if resp.JSON200 == nil {
				return sf.apiError(resp.HTTPResponse, resp.Body)
			}
			w := resp.JSON200
			if *out == outputJSON {
				return printJSON(cmd.OutOrStdout(), w)
			}
			if !w.AuthEnabled {
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s (%s; the server runs without authentication)\n", w.Name, w.Role)
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s (%s)\n", w.Name, w.Role)
			return err
		},
	}
	sf.register(cmd, false)
	out = addOutputFlags(cmd)
	return cmd
}
