package mcp

import (
	"context"
	"encoding/json"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/faucet-dev/faucet/openapi/client"
	"github.com/faucet-dev/faucet/pipeline/scaffold"
)

type listConnectorsIn struct {
	Kind string `json:"kind,omitempty" jsonschema:"Only this kind: source, sink, transform, state or all (the default)."`
}

// catalogKeys are the members of the API's connector catalog by kind.
var catalogKeys = map[string]string{"source": "sources", "sink": "sinks", "transform": "transforms", "state": "state"}

func listConnectors() toolDef {
	return define(sdk.Tool{
		Name: "list_connectors",
		Description: "List the connectors this faucet server has, each with a one-line description: sources and " +
			"sinks (faucet has no transforms or state stores yet, so those lists are empty).",
	}, false, shape{"kind": enum([]any{"source", "sink", "transform", "state", "all"})}.apply,
		func(ctx context.Context, api client.ClientInterface, in listConnectorsIn) outcome {
			body, refused := read(api.ListSchemas(ctx))
			if refused != nil {
				return *refused
			}
			key, ok := catalogKeys[in.Kind]
			if !ok {
				return jsonAnswer(body)
			}
			var all map[string]json.RawMessage
			if err := json.Unmarshal(body, &all); err != nil {
				return outcome{res: textError("read the connector catalog: " + err.Error())}
			}
			return marshalAnswer(map[string]json.RawMessage{key: all[key]})
		})
}

type connectorSchemaIn struct {
	Kind string `json:"kind" jsonschema:"The connector's role: source or sink (transform: none yet)."`
	Name string `json:"name" jsonschema:"The connector's name, as list_connectors gives it."`
}

func getConnectorSchema() toolDef {
	return define(sdk.Tool{
		Name: "get_connector_schema",
		Description: "Return the JSON Schema of a connector's config block: its fields, their types, defaults and " +
			"descriptions, which are required, and which are secret (writeOnly).",
	}, false, shape{"kind": enum([]any{"source", "sink", "transform"}), "name": maxLen(maxConnectorBytes)}.apply,
		func(ctx context.Context, api client.ClientInterface, in connectorSchemaIn) outcome {
			return answer(api.GetSchema(ctx, client.GetSchemaParamsKind(in.Kind), in.Name))
		})
}

type scaffoldIn struct {
	Source string `json:"source" jsonschema:"The source connector."`
	Sink   string `json:"sink" jsonschema:"The sink connector."`
	Name   string `json:"name,omitempty" jsonschema:"The pipeline's name (default my-pipeline)."`
}

// scaffoldComment heads a starter config scaffold_config writes.
const scaffoldComment = "A starter pipeline written by scaffold_config: fill in the empty fields, check it with\n" +
	"validate_config, run it with run_pipeline. Connector fields: get_connector_schema."

func scaffoldConfig() toolDef {
	return define(sdk.Tool{
		Name: "scaffold_config",
		Description: "Write a starter pipeline config (commented YAML) for a source and a sink from their config " +
			"schemas, as faucet init does: each required field set to its default or example, or left empty; a secret " +
			"field reads an environment variable instead of holding the secret; the optional fields follow, commented " +
			"out. It only returns text: nothing is stored or run.",
	}, false, shape{"source": maxLen(maxConnectorBytes), "sink": maxLen(maxConnectorBytes), "name": maxLen(maxNameBytes)}.apply,
		func(ctx context.Context, api client.ClientInterface, in scaffoldIn) outcome {
			src, refused := read(api.GetSchema(ctx, client.GetSchemaParamsKindSource, in.Source))
			if refused != nil {
				return *refused
			}
			sink, refused := read(api.GetSchema(ctx, client.GetSchemaParamsKindSink, in.Sink))
			if refused != nil {
				return *refused
			}
			name := in.Name
			if name == "" {
				name = "my-pipeline"
			}
			text := scaffold.Starter{
				Comment: scaffoldComment, Name: name,
				Source: scaffold.Side{Connector: in.Source, Schema: src},
				Sink:   scaffold.Side{Connector: in.Sink, Schema: sink},
			}.Render()
			o := marshalAnswer(map[string]string{"config": text, "config_format": "yaml"})
			o.res.Content = []sdk.Content{&sdk.TextContent{Text: text}}
			return o
		})
}

// configProps bounds a config argument and its format.
func configProps(maxConfig int) shape {
	return shape{"config": maxLen(maxConfig), "config_format": enum(configFormats)}
}

type validateIn struct {
	Config       string `json:"config" jsonschema:"The pipeline config, YAML or JSON."`
	ConfigFormat string `json:"config_format,omitempty" jsonschema:"yaml (the default) or json."`
}

func validateConfig(maxConfig int) toolDef {
	return define(sdk.Tool{
		Name: "validate_config",
		Description: "Check a pipeline config as a submit would, then probe its connectors (connect, permissions) " +
			"without running it. A config that does not load is an error listing every problem with its path, line " +
			"and column; a failed probe is an error carrying the probes' report. It stores and runs nothing, but it " +
			"reaches the connectors' systems, so it takes the operator role, as POST /v1/doctor does.",
	}, false, configProps(maxConfig).apply,
		func(ctx context.Context, api client.ClientInterface, in validateIn) outcome {
			return doctor(ctx, api, in.Config, in.ConfigFormat)
		})
}

// doctor probes a config through POST /v1/doctor.
func doctor(ctx context.Context, api client.ClientInterface, config, format string) outcome {
	req := client.DoctorRequest{Config: config}
	if format != "" {
		f := client.ConfigFormat(format)
		req.ConfigFormat = &f
	}
	body, refused := read(api.RunDoctor(ctx, req))
	if refused != nil {
		return *refused
	}
	return marshalAnswer(map[string]any{"valid": true, "report": json.RawMessage(body)})
}
