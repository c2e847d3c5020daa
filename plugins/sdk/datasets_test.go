package sdk

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestSamplerInfersTypesAndNullability(t *testing.T) {
	s := &sampler{}
	s.observe([]byte(`{"id":1,"name":"a","score":1,"tags":[1,{"x":"}"}],"meta":{"k":"v"},"ok":true,"w\u00e9ird":null}
{"id":2,"name":"b","score":1.5,"tags":[],"meta":{},"ok":false,"w\u00e9ird":"x","late":"z"}
{"id":3,"name":null,"score":2e3,"tags":[],"meta":{},"ok":true,"wéird":1}
`))
	got := s.schema()
	want := &Schema{Columns: []Column{
		{Name: "id", Type: TypeInteger},
		{Name: "name", Type: TypeString, Nullable: true},
		{Name: "score", Type: TypeNumber},
		{Name: "tags", Type: TypeArray},
		{Name: "meta", Type: TypeObject},
		{Name: "ok", Type: TypeBoolean},
		{Name: "wéird", Type: "", Nullable: true},
		{Name: "late", Type: TypeString, Nullable: true},
	}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("schema = %+v\nwant   %+v", got, want)
	}
	var none *sampler
	none.observe([]byte(`{"a":1}` + "\n"))
	if none.schema() != nil || (&sampler{}).schema() != nil {
		t.Error("a nil or empty sampler has a schema")
	}
}

// TestSamplerFollowsMembersInAnyOrder: a column is one column wherever
// its member sits in a record, and keeps the place it was first seen at.
func TestSamplerFollowsMembersInAnyOrder(t *testing.T) {
	s := &sampler{}
	s.observe([]byte(`{"a":1,"b":"x"}
{"b":"y","a":2}
{"c":true,"a":3}
{"a":4,"c":false,"b":null}
`))
	want := &Schema{Columns: []Column{
		{Name: "a", Type: TypeInteger},
		{Name: "b", Type: TypeString, Nullable: true},
		{Name: "c", Type: TypeBoolean, Nullable: true},
	}}
	if got := s.schema(); !reflect.DeepEqual(got, want) {
		t.Errorf("schema = %+v\nwant   %+v", got, want)
	}
}

// TestSamplerKeepsWideAndLongRecordsApart: past indexFrom columns, in any
// order, and in records too long to share their names' copy, every member
// is the column of its name, and the names are the sampler's own: the
// batch they came in may be reused.
func TestSamplerKeepsWideAndLongRecordsApart(t *testing.T) {
	const width = indexFrom + 8
	member := func(i int, v string) string { return fmt.Sprintf(`"c%02d":%s`, i, v) }
	var forward, backward []string
	for i := range width {
		forward = append(forward, member(i, "1"))
		backward = append([]string{member(i, `"x"`)}, backward...)
	}
	long := `{"pad":"` + strings.Repeat("p", maxSharedRecord) + `",` + member(0, "null") + `}`
	batch := []byte("{" + strings.Join(forward, ",") + "}\n{" + strings.Join(backward, ",") + "}\n" + long + "\n")
	s := &sampler{}
	s.observe(batch)
	for i := range batch {
		batch[i] = '#'
	}
	got := s.schema().Columns
	if len(got) != width+1 {
		t.Fatalf("%d columns, want %d: %+v", len(got), width+1, got)
	}
	for i, c := range got[:width] {
		// An integer, then a string; null (c00) or missing (the rest) in
		// the long record.
		want := Column{Name: fmt.Sprintf("c%02d", i), Nullable: true}
		if c != want {
			t.Errorf("column %d = %+v, want %+v (integers and strings have no one type)", i, c, want)
		}
	}
	if pad := got[width]; pad.Name != "pad" || pad.Type != TypeString || !pad.Nullable {
		t.Errorf("the long record's own column = %+v", pad)
	}
}

// TestSamplerBoundsItsWork: past the first records it looks at a few of
// each batch only.
func TestSamplerBoundsItsWork(t *testing.T) {
	s := &sampler{}
	batch := []byte(strings.Repeat(`{"a":1}`+"\n", 5000))
	s.observe(batch)
	s.observe(batch)
	if s.records != sampleFirst+samplePerBatch {
		t.Errorf("sampled %d records, want %d", s.records, sampleFirst+samplePerBatch)
	}
	s.observe([]byte(`{"a":null,"b":"x"}` + "\n"))
	if got := s.schema().Columns; !got[0].Nullable || !got[1].Nullable {
		t.Errorf("a null and a late column after the first records: %+v", got)
	}
}

func TestRedactURI(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://u:secret@h:5432/db":               "postgres://u@h:5432/db",
		"postgres://h/db?sslmode=require&password=pw": "postgres://h/db?sslmode=require",
		"postgres://u@h/db":                           "postgres://u@h/db",
		"file:///tmp/a%20b.csv":                       "file:///tmp/a%20b.csv",
		"postgres://u:p%zz@h/db":                      "postgres://h/db",
		"weird:u:pw@host":                             "weird:host",
		"postgres://h/db?pass%77ord=pw":               "postgres://h/db",
		"file:///srv/in.csv":                          "file:///srv/in.csv",
	} {
		if got := RedactURI(in); got != want {
			t.Errorf("RedactURI(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFileURI(t *testing.T) {
	t.Chdir(t.TempDir())
	got, err := FileURI(context.Background(), "in dir/x.csv")
	if err != nil || !strings.HasPrefix(got, "file:///") || !strings.HasSuffix(got, "/in%20dir/x.csv") {
		t.Errorf("FileURI = %q, %v", got, err)
	}
	// A confined call's relative path is the one its Files opens: beneath
	// the first root, not the working directory.
	confined := WithFiles(context.Background(), NewFiles([]string{"/srv/a", "/srv/b"}, nil))
	if got, err := FileURI(confined, "out/x.csv"); err != nil || got != "file:///srv/a/out/x.csv" {
		t.Errorf("FileURI in a confined call = %q, %v; want file:///srv/a/out/x.csv", got, err)
	}
}
