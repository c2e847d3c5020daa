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

// apart says whether a plugin speaking version, asked for its datasets,
// is asked for their observed schema once (Stats.observed).
func apart(reported bool, version int) bool {
	return reported && protocol.Supports(version, protocol.VersionObserved)
}

// observation turns the final stats of a session of connector name into
// what the pipeline keeps of it, dropping what is out of bounds or not
// text. A dataset without a schema has the session's observed one, or,
// when the session sent none, sampled: the sink's, for a source whose
// sink took the one sample of a pipe.
func observation(name string, st *connectorv1.Stats, sampled *connectorv1.DatasetSchema) pipeline.Observation {
	o := pipeline.Observation{Records: st.GetRecords(), Bytes: st.GetBytes()}
	if n := len(st.GetDatasets()); n > 0 {
		o.Datasets = make([]pipeline.Dataset, 0, min(n, maxDatasets))
	}
	observed := st.GetObserved()
	if observed == nil {
		observed = sampled
	}
	// The observed schema is converted once, and its datasets share it:
	// nothing downstream changes a schema.
	var shared *pipeline.Schema
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
		switch s := d.GetSchema(); {
		case s != nil:
			ds.Schema = schema(s)
		case observed != nil:
			if shared == nil {
				shared = schema(observed)
			}
			ds.Schema = shared
		}
		o.Datasets = append(o.Datasets, ds)
	}
	return o
}

// schema is s as the pipeline keeps it.
func schema(s *connectorv1.DatasetSchema) *pipeline.Schema {
	out := &pipeline.Schema{}
	if n := len(s.GetColumns()); n > 0 {
		out.Columns = make([]pipeline.Column, 0, min(n, maxColumns))
	}
	for _, c := range s.GetColumns() {
		if len(out.Columns) == maxColumns {
			break
		}
		if !usable(c.GetName()) || !text(c.GetType()) || !text(c.GetDbType()) {
			continue
		}
		out.Columns = append(out.Columns, pipeline.Column{Name: c.GetName(), Type: c.GetType(), Nullable: c.GetNullable(), DBType: c.GetDbType()})
	}
	return out
}

// usable is a non-empty, bounded, valid UTF-8 string.
func usable(s string) bool { return s != "" && text(s) }

func text(s string) bool { return len(s) <= maxText && utf8.ValidString(s) }
