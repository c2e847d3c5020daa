package main

import (
	"fmt"
	"net/http"

	"github.com/danielgtaylor/huma/v2/adapters/humago"
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
			doc, err := openAPIDocument(specVersion)
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

// openAPIDocument renders the API's document as YAML without starting a
// server: registration only describes the operations.
func openAPIDocument(specVersion string) ([]byte, error) {
	a := humago.New(http.NewServeMux(), api.Config())
	api.Register(a, &api.Deps{})
	switch specVersion {
	case "3.1":
		return a.OpenAPI().YAML()
	case "3.0":
		return a.OpenAPI().DowngradeYAML()
	}
	return nil, fmt.Errorf("unknown --spec-version %q (want 3.1 or 3.0)", specVersion)
}
