// Package builtin lists the connectors compiled into faucet. Each is a plain
// SDK connector; faucet still runs them out of process, by re-executing its
// own binary as `faucet connector serve NAME`.
package builtin

import (
	"sort"

	"github.com/faucet-dev/faucet/plugins/builtin/csv"
	"github.com/faucet-dev/faucet/plugins/builtin/dlq"
	"github.com/faucet-dev/faucet/plugins/builtin/generate"
	"github.com/faucet-dev/faucet/plugins/builtin/jsonl"
	"github.com/faucet-dev/faucet/plugins/builtin/postgres"
	"github.com/faucet-dev/faucet/plugins/builtin/sqlite"
	"github.com/faucet-dev/faucet/plugins/builtin/stdout"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// connectors are the built-ins, one line each.
var connectors = []sdk.Connector{
	csv.Connector{},
	dlq.Connector{},
	generate.Connector{},
	jsonl.Connector{},
	postgres.Connector{},
	sqlite.Connector{},
	stdout.Connector{},
}

// All returns the built-in connectors sorted by name.
func All() []sdk.Connector {
	out := append([]sdk.Connector(nil), connectors...)
	sort.Slice(out, func(i, j int) bool { return out[i].Spec().Name < out[j].Spec().Name })
	return out
}

// Lookup returns the built-in connector with the given name.
func Lookup(name string) (sdk.Connector, bool) {
	for _, c := range connectors {
		if c.Spec().Name == name {
			return c, true
		}
	}
	return nil, false
}
