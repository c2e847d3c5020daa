package main

import (
	"github.com/spf13/cobra"

	"github.com/faucet-dev/faucet/server/api"
)

func newOpenAPICmd() *cobra.Command {
	var specVersion string
	cmd := &cobra.Command{
		Use:   "openapi",
		Short: "Print the OpenAPI document of the faucet serve HTTP API",
		Long: "Print the OpenAPI document of the faucet serve HTTP API, derived from the server's code. " +
			"3.1 is the native document; 3.0 is the same API for generators that do not read 3.1 yet.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			doc, err := api.Document(specVersion)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(doc)
			return err
		},
	}
	cmd.Flags().StringVar(&specVersion, "spec-version", "3.1", "OpenAPI version of the document: 3.1 or 3.0")
	return cmd
}
