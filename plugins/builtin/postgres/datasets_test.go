package postgres

import (
	"context"
	"encoding/json"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/internal/testpg"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// TestDatasetsReadTheCatalog: a table is named by host, port, database and
// schema-qualified table, never by who connects or with which password, and
// its schema is the catalog's; a query is named by its hash and described
// by its result columns.
func TestDatasetsReadTheCatalog(t *testing.T) {
	t.Parallel()
	dbURL := testpg.Database(t)
	exec(t, dbURL, `CREATE TABLE people (id bigint PRIMARY KEY, name varchar(20), score numeric, tags text[], active boolean NOT NULL, doc jsonb)`)
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	base := "postgres://" + u.Host + u.Path
	sink, _ := json.Marshal(map[string]any{"url": dbURL, "table": "people"})
	got, err := Connector{}.Datasets(context.Background(), sdk.DatasetsRequest{Role: sdk.RoleSink, Config: sink})
	if err != nil {
		t.Fatal(err)
	}
	want := []sdk.Dataset{{URI: base + "/public.people", Schema: &sdk.Schema{Columns: []sdk.Column{
		{Name: "id", Type: "integer", DBType: "bigint"},
		{Name: "name", Type: "string", Nullable: true, DBType: "character varying(20)"},
		{Name: "score", Type: "number", Nullable: true, DBType: "numeric"},
		{Name: "tags", Type: "array", Nullable: true, DBType: "text[]"},
		{Name: "active", Type: "boolean", DBType: "boolean"},
		{Name: "doc", Type: "", Nullable: true, DBType: "jsonb"},
	}}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("table datasets = %+v\nwant %+v", got, want)
	}
	if strings.Contains(got[0].URI, u.User.Username()+"@") {
		t.Errorf("the URI names the user: %s", got[0].URI)
	}

	src, _ := json.Marshal(map[string]any{"url": dbURL, "query": "SELECT id, name AS who FROM people;"})
	got, err = Connector{}.Datasets(context.Background(), sdk.DatasetsRequest{Role: sdk.RoleSource, Config: src})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !strings.HasPrefix(got[0].URI, base+"/query-") || len(got[0].URI) != len(base+"/query-")+12 {
		t.Fatalf("query dataset = %+v", got)
	}
	wantCols := []sdk.Column{{Name: "id", Type: "integer", Nullable: true, DBType: "bigint"}, {Name: "who", Type: "string", Nullable: true, DBType: "character varying(20)"}}
	if !reflect.DeepEqual(got[0].Schema.Columns, wantCols) {
		t.Errorf("query columns = %+v, want %+v", got[0].Schema.Columns, wantCols)
	}
}
