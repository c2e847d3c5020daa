package host

import (
	"unicode/utf8"

	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/plugins/internal/protocol"
	connectorv1 "github.com/faucet-dev/faucet/plugins/proto/faucet/connector/v1"
)

// Bounds of what faucet takes from one session's report, whatever the
// plugin sends: the catalog stores it, and a plugin need not be built with
// the SDK, which keeps within them already.
const (
	maxDatasets = 64
	maxColumns  = 1024
	maxText     = 2048
)

// reports says whether to ask a plugin speaking version for the datasets
// of a session opened with the observing ctx.
func reports(observe bool, version int) bool {
	return observe && protocol.Supports(version, protocol.VersionDatasets)
}

// observation turns the final stats of a session of connector name into
// what the pipeline keeps of it, dropping what is out of bounds or not
// text.
func observation(name string, st *connectorv1.Stats) pipeline.Observation {
	o := pipeline.Observation{Records: st.GetRecords(), Bytes: st.GetBytes()}
	if n := len(st.GetDatasets()); n > 0 {
		o.Datasets = make([]pipeline.Dataset, 0, min(n, maxDatasets))
	}
	for _, d := range st.GetDatasets() {
		if len(o.Datasets) == maxDatasets {
			break
		}
		if !usable(d.GetUri()) || (d.GetKind() != "" && !usable(d.GetKind())) {
			continue
		}
		ds := pipeline.Dataset{Kind: d.GetKind(), URI: d.GetUri()}
		if ds.Kind == "" {
			ds.Kind = name
		}
		if s := d.GetSchema(); s != nil {
			ds.Schema = &pipeline.Schema{}
			if n := len(s.GetColumns()); n > 0 {
				ds.Schema.Columns = make([]pipeline.Column, 0, min(n, maxColumns))
			}
			for _, c := range s.GetColumns() {
				if len(ds.Schema.Columns) == maxColumns {
					break
				}
				if !usable(c.GetName()) || !text(c.GetType()) || !text(c.GetDbType()) {
					continue
				}
				ds.Schema.Columns = append(ds.Schema.Columns, pipeline.Column{Name: c.GetName(), Type: c.GetType(), Nullable: c.GetNullable(), DBType: c.GetDbType()})
			}
		}
		o.Datasets = append(o.Datasets, ds)
	}
	return o
}

// usable is a non-empty, bounded, valid UTF-8 string.
func usable(s string) bool { return s != "" && text(s) }

func text(s string) bool { return len(s) <= maxText && utf8.ValidString(s) }
