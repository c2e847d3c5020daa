package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/faucet-dev/faucet/internal/testpg"
)

// TestCheckValueAgreesWithTheServer: what checkValue refuses the server
// refuses too (no good record is dead-lettered by the sink's own checks),
// and the common bad values are caught before the server sees them.
func TestCheckValueAgreesWithTheServer(t *testing.T) {
	conn, err := pgx.Connect(context.Background(), testpg.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	types := map[string]columnType{
		"bigint": {oid: pgtype.Int8OID}, "smallint": {oid: pgtype.Int2OID}, "numeric": {oid: pgtype.NumericOID},
		"double precision": {oid: pgtype.Float8OID}, "boolean": {oid: pgtype.BoolOID}, "uuid": {oid: pgtype.UUIDOID},
		"varchar(3)": {oid: pgtype.VarcharOID, typmod: 3 + 4}, "text": {oid: pgtype.TextOID},
	}
	cases := []struct {
		typ     string
		value   any
		refused bool // by checkValue
	}{
		{"bigint", "42", false}, {"bigint", " 42 ", false}, {"bigint", "+7", false}, {"bigint", 7, false},
		{"bigint", "-9223372036854775808", false}, {"bigint", "n/a", true}, {"bigint", "12.5", true},
		{"bigint", "99999999999999999999", true}, {"bigint", "", true}, {"bigint", "1e5", false},
		{"smallint", "40000", true}, {"smallint", "-32768", false},
		{"numeric", "12.34", false}, {"numeric", 12.5, false}, {"numeric", "1e5", false}, {"numeric", "NaN", false},
		{"numeric", " .5", false}, {"numeric", "-Infinity", false}, {"numeric", "n/a", true}, {"numeric", "abc", true},
		{"numeric", "12,5", true}, {"double precision", "inf", false}, {"double precision", "x", true},
		{"boolean", "TRUE", false}, {"boolean", "yes", false}, {"boolean", " off ", false}, {"boolean", "t", false},
		{"boolean", true, false}, {"boolean", "maybe", true}, {"boolean", "2", true}, {"boolean", "o", true},
		{"uuid", "{a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11}", false}, {"uuid", "A0EEBC999C0B4EF8BB6D6BB9BD380A11", false},
		{"uuid", "xyz", true}, {"uuid", "a0eebc99", true},
		{"varchar(3)", "abc", false}, {"varchar(3)", "abc   ", false}, {"varchar(3)", "abcd", true}, {"varchar(3)", "äöü", false},
		{"text", "a\u0000b", true}, {"text", "anything", false},
	}
	var scratch []byte
	for _, c := range cases {
		raw, _ := json.Marshal(c.value)
		err := checkValue(raw, types[c.typ], &scratch)
		if (err != nil) != c.refused {
			t.Errorf("%s %s: checkValue says %v", c.typ, raw, err)
		}
		if !c.refused {
			continue
		}
		// What the sink refuses, the server's COPY refuses as well.
		text := fmt.Sprint(c.value)
		ctx := context.Background()
		if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS chk; CREATE TEMP TABLE chk (v "+c.typ+")"); err != nil {
			t.Fatal(err)
		}
		if _, cerr := conn.PgConn().CopyFrom(ctx, strings.NewReader(text+"\n"), "COPY chk FROM STDIN"); cerr == nil {
			t.Errorf("%s %s: the sink refuses a value the server's COPY takes", c.typ, raw)
		}
	}
	if err := checkValue([]byte("null"), columnType{oid: pgtype.TextOID, notNull: true}, &scratch); err == nil {
		t.Error("a null for a NOT NULL column passed")
	}
}
