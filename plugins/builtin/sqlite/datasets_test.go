package sqlite

import (
	"context"
	"encoding/json"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/faucet-dev/faucet/plugins/sdk"
)

// TestDatasetsReadTheDeclaredSchema: a table is named by the absolute path
// of its file and its schema-qualified name, with the declared columns; a
// query by its hash, with its result columns.
func TestDatasetsReadTheDeclaredSchema(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "db.sqlite")
	exec(t, path, `CREATE TABLE people (id INTEGER PRIMARY KEY, name TEXT NOT NULL, score REAL, active BOOLEAN, doc JSON)`)
	sink, _ := json.Marshal(map[string]any{"path": path, "table": "people"})
	got, err := Connector{}.Datasets(context.Background(), sdk.DatasetsRequest{Role: sdk.RoleSink, Config: sink})
	if err != nil {
		t.Fatal(err)
	}
	want := []sdk.Dataset{{URI: "sqlite://" + path + "?table=main.people", Schema: &sdk.Schema{Columns: []sdk.Column{
		{Name: "id", Type: "integer", DBType: "INTEGER"},
		{Name: "name", Type: "string", DBType: "TEXT"},
		{Name: "score", Type: "number", Nullable: true, DBType: "REAL"},
		{Name: "active", Type: "boolean", Nullable: true, DBType: "BOOLEAN"},
		{Name: "doc", Type: "", Nullable: true, DBType: "JSON"},
	}}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("table datasets = %+v\nwant %+v", got, want)
	}

	src, _ := json.Marshal(map[string]any{"path": path, "query": "SELECT id, name FROM people;"})
	got, err = Connector{}.Datasets(context.Background(), sdk.DatasetsRequest{Role: sdk.RoleSource, Config: src})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !strings.HasPrefix(got[0].URI, "sqlite://"+path+"?table=query-") {
		t.Fatalf("query dataset = %+v", got)
	}
	wantCols := []sdk.Column{{Name: "id", Type: "integer", Nullable: true, DBType: "INTEGER"}, {Name: "name", Type: "string", Nullable: true, DBType: "TEXT"}}
	if !reflect.DeepEqual(got[0].Schema.Columns, wantCols) {
		t.Errorf("query columns = %+v, want %+v", got[0].Schema.Columns, wantCols)
	}
}
