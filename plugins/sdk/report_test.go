package sdk

import (
	"context"
	"testing"

	"google.golang.org/grpc"

	connectorv1 "github.com/faucet-dev/faucet/plugins/proto/faucet/connector/v1"
)

// twoRecords is a source of two records that names a file and a table it
// declares the columns of, and keeps the Observed schema it was told.
type twoRecords struct{ observed []*Schema }

var declared = &Schema{Columns: []Column{{Name: "id", Type: TypeInteger, DBType: "bigint"}}}

func (*twoRecords) Spec() Spec { return Spec{Name: "two"} }

func (*twoRecords) Read(_ context.Context, _ ReadRequest, w *BatchWriter) error {
	if err := w.AppendRaw([]byte(`{"id":1}`)); err != nil {
		return err
	}
	return w.AppendRaw([]byte(`{"id":null}`))
}

func (s *twoRecords) Datasets(_ context.Context, req DatasetsRequest) ([]Dataset, error) {
	s.observed = append(s.observed, req.Observed)
	return []Dataset{{URI: "file:///in.jsonl"}, {URI: "file:///same.jsonl", Schema: req.Observed}, {URI: "db://t", Schema: declared}}, nil
}

// readStream is the server side of a Read call, keeping what it was sent.
type readStream struct {
	grpc.ServerStream
	sent []*connectorv1.ReadResponse
}

func (s *readStream) Send(m *connectorv1.ReadResponse) error {
	s.sent = append(s.sent, m)
	return nil
}

func (*readStream) Context() context.Context { return context.Background() }

// TestReportObservedApart: asked for the observed schema apart (1.4), a
// session sends it once and leaves it off the datasets that have it,
// keeping a schema of their own; asked as 1.2 and 1.3 hosts ask, it sends
// it on each; and a source whose reader samples takes no sample itself.
func TestReportObservedApart(t *testing.T) {
	observed := &connectorv1.DatasetSchema{Columns: []*connectorv1.DatasetColumn{{Name: "id", Type: TypeInteger, Nullable: true}}}
	own := &connectorv1.DatasetSchema{Columns: []*connectorv1.DatasetColumn{{Name: "id", Type: TypeInteger, DbType: "bigint"}}}
	for _, tc := range []struct {
		name         string
		req          *connectorv1.ReadRequest
		wantObserved bool // the Describer was told the sample
		stats        *connectorv1.DatasetSchema
		datasets     []*connectorv1.DatasetSchema
	}{
		{"1.2", &connectorv1.ReadRequest{ReportDatasets: true}, true, nil, []*connectorv1.DatasetSchema{observed, observed, own}},
		{"apart", &connectorv1.ReadRequest{ReportDatasets: true, ReportObserved: true}, true, observed, []*connectorv1.DatasetSchema{nil, nil, own}},
		{"sampled by the reader", &connectorv1.ReadRequest{ReportDatasets: true, ReportObserved: true, SampledByReader: true}, false, nil, []*connectorv1.DatasetSchema{nil, nil, own}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := &twoRecords{}
			stream := &readStream{}
			if err := newServer(src).Read(tc.req, stream); err != nil {
				t.Fatal(err)
			}
			if len(src.observed) != 1 || (src.observed[0] != nil) != tc.wantObserved {
				t.Fatalf("Datasets was told %+v; want a sample: %v", src.observed, tc.wantObserved)
			}
			st := stream.sent[len(stream.sent)-1].GetStats()
			if !sameSchema(st.GetObserved(), tc.stats) {
				t.Errorf("stats.observed = %v, want %v", st.GetObserved(), tc.stats)
			}
			if len(st.GetDatasets()) != len(tc.datasets) {
				t.Fatalf("datasets = %v", st.GetDatasets())
			}
			for i, d := range st.GetDatasets() {
				if d.GetKind() != "two" || !sameSchema(d.GetSchema(), tc.datasets[i]) {
					t.Errorf("dataset %s: kind %q, schema %v; want %v", d.GetUri(), d.GetKind(), d.GetSchema(), tc.datasets[i])
				}
			}
		})
	}
}

func sameSchema(a, b *connectorv1.DatasetSchema) bool {
	if (a == nil) != (b == nil) || len(a.GetColumns()) != len(b.GetColumns()) {
		return false
	}
	for i, c := range a.GetColumns() {
		d := b.GetColumns()[i]
		if c.GetName() != d.GetName() || c.GetType() != d.GetType() || c.GetNullable() != d.GetNullable() || c.GetDbType() != d.GetDbType() {
			return false
		}
	}
	return true
}
