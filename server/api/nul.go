package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"
)

// refuseNUL finds a NUL character in any input of a request — a path or
// query parameter, a raw NUL byte in any body, or any key or string of a
// JSON body — and returns the 400 naming where it is. PostgreSQL cannot store NUL in text and SQLite
// would, so one check here keeps both histories alike and the database
// errors out of reach. A body is read (up to limit bytes, which is what the
// operation accepts at most) and handed on unchanged.
func refuseNUL(ctx huma.Context, limit int64) error {
	for _, p := range ctx.Operation().Parameters {
		switch p.In {
		case "path":
			if strings.ContainsRune(ctx.Param(p.Name), 0) {
				return errBadConfig(fmt.Sprintf("path parameter %s contains a NUL character", p.Name), nil)
			}
		}
	}
	u := ctx.URL()
	q := u.Query()
	names := make([]string, 0, len(q))
	for name := range q {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, v := range q[name] {
			if strings.ContainsRune(name, 0) || strings.ContainsRune(v, 0) {
				return errBadConfig(fmt.Sprintf("query parameter %s contains a NUL character", visible(name)), nil)
			}
		}
	}
	if ctx.Operation().RequestBody == nil {
		return nil
	}
	r, _ := humago.Unwrap(ctx)
	buf, err := io.ReadAll(io.LimitReader(r.Body, limit))
	rest := r.Body
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(buf), rest), rest}
	if err == nil && bytes.IndexByte(buf, 0) >= 0 {
		// Neither JSON nor YAML allows a raw NUL byte, so whatever the
		// media type, the body is refused before it is parsed.
		return errBadConfig("body contains a NUL byte", nil)
	}
	if err != nil || !bytes.Contains(buf, []byte(`\u0000`)) {
		// A body that fails to read or does not parse is the operation's
		// to refuse, with its own error.
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(buf))
	dec.UseNumber()
	var body any
	if dec.Decode(&body) != nil {
		return nil
	}
	if at, found := nulAt(body, "body"); found {
		return errBadConfig(at+" contains a NUL character", nil)
	}
	return nil
}

// nulAt returns the path of the first key or string under v that holds a
// NUL character, keys in sorted order so the answer is the same every time.
func nulAt(v any, at string) (string, bool) {
	switch x := v.(type) {
	case string:
		return at, strings.ContainsRune(x, 0)
	case []any:
		for i, e := range x {
			if p, ok := nulAt(e, at+"["+strconv.Itoa(i)+"]"); ok {
				return p, true
			}
		}
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			child := at + "." + k
			if strings.ContainsRune(k, 0) {
				return at + " key " + visible(k), true
			}
			if p, ok := nulAt(x[k], child); ok {
				return p, true
			}
		}
	}
	return "", false
}

// visible spells the NUL characters of a name that holds them.
func visible(s string) string { return strings.ReplaceAll(s, "\x00", `\0`) }
