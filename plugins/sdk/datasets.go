package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/faucet-dev/faucet/plugins/connector"
	connectorv1 "github.com/faucet-dev/faucet/plugins/proto/faucet/connector/v1"
)

// Describer is implemented by connectors that tell faucet which datasets a
// session read or wrote (a file, a table), for faucet's catalog of what
// moved where. It is optional: a connector without it moves data all the
// same, and its runs are catalogued without its side.
type Describer interface {
	// Datasets names what the session of req touched, each once. faucet
	// calls it after a read that ended cleanly or a write that committed,
	// and only when it keeps a catalog; an error is logged and the datasets
	// left out, never failing the session.
	Datasets(ctx context.Context, req DatasetsRequest) ([]Dataset, error)
}

// DatasetsRequest is the session a Describer describes.
type DatasetsRequest struct {
	// Role says whether the session read (RoleSource) or wrote (RoleSink).
	Role   Role
	Config json.RawMessage
	// Shard is the shard a source session read; nil for all of it.
	Shard *Shard
	// Observed is the schema of the records the session moved, inferred
	// from a sample of their values (the first records and a few of every
	// batch after them); nil when none moved, and in a source read by a sink
	// directly, which samples the same records: a Dataset without a Schema
	// then has the sink's. A connector whose records carry their own types
	// (a file of JSON, CSV's strings) leaves Dataset.Schema nil for it; one
	// with a catalog to ask (a database) reads the schema from there.
	Observed *Schema
}

// Dataset is one thing a session read or wrote.
type Dataset struct {
	// Kind is the connector kind; empty means the connector's Spec name.
	Kind string
	// URI names the dataset canonically and the same way on every run,
	// since faucet identifies the dataset by it: without credentials (faucet
	// removes a URL's password all the same), a file path absolute (FileURI).
	URI string
	// Schema is the dataset's schema; nil means the request's Observed.
	Schema *Schema
}

// Schema is the top-level shape of a dataset's records, and Column one of
// its fields; a Column's Type is one of the Type constants, or empty when
// the values have several.
type (
	Schema = connector.Schema
	Column = connector.Column
)

// The JSON Schema type names a Column's Type takes.
const (
	TypeString  = "string"
	TypeInteger = "integer"
	TypeNumber  = "number"
	TypeBoolean = "boolean"
	TypeObject  = "object"
	TypeArray   = "array"
)

// FileURI is the canonical URI of a file dataset: file:// and the absolute
// path (a glob stays a glob), so the same file named two ways is one
// dataset. A relative path is the one the call's Files opens (FilesFrom
// ctx): beneath the first file root in a confined call, in the working
// directory otherwise.
func FileURI(ctx context.Context, path string) (string, error) {
	abs, err := FilesFrom(ctx).Abs(path)
	if err != nil {
		return "", fmt.Errorf("file dataset %s: %w", path, err)
	}
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String(), nil
}

// RedactURI returns uri without credentials: the password of its userinfo
// and the password query parameters are removed. Text that does not parse
// as a URL loses everything between its scheme and its last "@", where a
// password the parser did not see may sit.
func RedactURI(uri string) string {
	// A password sits after a scheme and before an "@", or in a query
	// parameter named password or sslpassword, either perhaps
	// percent-encoded: a URI with no "@", "%" or "password" has none, and
	// most (a file's, a seed's) are such.
	if !strings.ContainsAny(uri, "@%") && !strings.Contains(uri, "password") {
		return uri
	}
	u, err := url.Parse(uri)
	if err == nil && strings.Contains(u.Opaque, "@") {
		// scheme:user:password@host, which no parser reads as userinfo.
		return u.Scheme + ":" + u.Opaque[strings.LastIndex(u.Opaque, "@")+1:]
	}
	if err != nil {
		at := strings.LastIndex(uri, "@")
		if at < 0 {
			return uri
		}
		start := strings.Index(uri, "://")
		if start < 0 || start > at {
			return uri[at+1:]
		}
		return uri[:start+3] + uri[at+1:]
	}
	changed := false
	if _, ok := u.User.Password(); ok {
		u.User = url.User(u.User.Username())
		changed = true
	}
	if q := u.Query(); q.Has("password") || q.Has("sslpassword") {
		q.Del("password")
		q.Del("sslpassword")
		u.RawQuery = q.Encode()
		changed = true
	}
	if !changed {
		return uri
	}
	return u.String()
}

// Bounds of what a session reports, so a connector describing a huge
// table or a wide glob cannot flood faucet's catalog.
const (
	maxReportedDatasets = 64
	maxReportedColumns  = 1024
	maxReportedText     = 2048
	describeTimeout     = 30 * time.Second
)

// report fills the final stats of a session asked for its datasets: what
// describe says of them, and, with apart (report_observed), the observed
// schema once, in stats.Observed, rather than on each dataset that has it.
func report(ctx context.Context, c Connector, name string, stats *connectorv1.Stats, req DatasetsRequest, apart bool) {
	stats.Datasets = describe(ctx, c, name, req, apart)
	if apart {
		stats.Observed = schemaProto(req.Observed)
	}
}

// describe asks a Describer for the datasets of a session, in the protocol's
// terms, a dataset without a kind taking name, the connector's; nil when
// the connector is none or fails. With apart, a dataset whose schema is the
// observed one goes without it.
func describe(ctx context.Context, c Connector, name string, req DatasetsRequest, apart bool) []*connectorv1.Dataset {
	d, ok := c.(Describer)
	if !ok {
		return nil
	}
	bounded, release := withLazyDeadline(ctx, describeTimeout)
	defer release()
	sets, err := d.Datasets(bounded, req)
	if err != nil {
		slog.Warn("describe the session's datasets; the catalog leaves them out", "role", string(req.Role), "error", err)
		return nil
	}
	var out []*connectorv1.Dataset
	for _, ds := range sets {
		if len(out) == maxReportedDatasets {
			slog.Warn("too many datasets for one session; the catalog keeps the first", "kept", maxReportedDatasets, "reported", len(sets))
			break
		}
		uri := RedactURI(ds.URI)
		if uri == "" || len(uri) > maxReportedText || !utf8.ValidString(uri) {
			slog.Warn("a dataset without a usable URI is left out of the catalog", "role", string(req.Role))
			continue
		}
		pd := &connectorv1.Dataset{Kind: ds.Kind, Uri: uri}
		if pd.Kind == "" {
			pd.Kind = name
		}
		switch {
		case ds.Schema != nil && ds.Schema != req.Observed:
			pd.Schema = schemaProto(ds.Schema)
		case !apart:
			pd.Schema = schemaProto(req.Observed)
		}
		out = append(out, pd)
	}
	return out
}

func schemaProto(s *Schema) *connectorv1.DatasetSchema {
	if s == nil {
		return nil
	}
	cols := s.Columns[:min(len(s.Columns), maxReportedColumns)]
	// The columns are made in one array, not one by one: a session reports
	// its schema once, and the allocations were most of what it cost.
	backing := make([]connectorv1.DatasetColumn, len(cols))
	out := &connectorv1.DatasetSchema{Columns: make([]*connectorv1.DatasetColumn, 0, len(cols))}
	for i, c := range cols {
		if c.Name == "" || len(c.Name) > maxReportedText || !utf8.ValidString(c.Name) {
			continue
		}
		pc := &backing[i]
		pc.Name, pc.Type, pc.Nullable, pc.DbType = c.Name, c.Type, c.Nullable, c.DBType
		out.Columns = append(out.Columns, pc)
	}
	return out
}
