package main

import (
	"errors"
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/faucet-dev/faucet/server/mcp"
)

func newMCPCmd() *cobra.Command {
	sf := &serverFlags{}
	var allowMutations bool
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve faucet's tools to an assistant over MCP on standard input and output, driving a faucet serve",
		Long: `Serve faucet's MCP tools (Model Context Protocol) on standard input and output,
for an assistant that starts faucet mcp as its tool server. The tools drive the
faucet serve at --server (default $FAUCET_SERVER or ` + defaultServer + `) with the
token of --token (default $FAUCET_TOKEN): the server authenticates, authorizes
and audits every call, and a role that lacks a permission gets a tool error
saying forbidden. They are the tools of faucet serve --mcp, read-only unless
--allow-mutations. Logs go to standard error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := sf.connect(cmd)
			if err != nil {
				return err
			}
			log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			srv := mcp.New(mcp.Options{AllowMutations: allowMutations, Log: log}).Server(mcp.Session{API: c.ClientInterface})
			err = srv.Run(cmd.Context(), mcp.Stdio(cmd.InOrStdin(), cmd.OutOrStdout()))
			if err == nil || errors.Is(err, io.EOF) || cmd.Context().Err() != nil {
				return cmd.Context().Err()
			}
			return err
		},
	}
	sf.register(cmd, false)
	cmd.Flags().BoolVar(&allowMutations, "allow-mutations", false, "offer the tools that change something (run_pipeline, the template releases); the token still needs the role the server asks")
	return cmd
}
