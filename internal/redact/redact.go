// Package redact removes secret values — API tokens, secret connector fields,
// interpolated ${env:…} values — from any text faucet shows or stores: the
// config loader's problems, the executor's errors, connector processes'
// output, a server's run logs and records. It is faucet's one redactor.
package redact

import (
	"fmt"
	"sort"
	"strings"
)

// Mask replaces every occurrence of a secret.
const Mask = "[REDACTED]"

// Redactor replaces a fixed set of secrets. The zero value and nil redact
// nothing.
type Redactor struct {
	r *strings.Replacer
}

// New builds a Redactor over every non-empty secret of the given sets.
// Longer secrets are replaced first, so a secret containing another is
// masked whole.
func New(sets ...[]string) *Redactor {
	seen := map[string]bool{}
	var all []string
	for _, set := range sets {
		for _, s := range set {
			if s != "" && !seen[s] {
				seen[s] = true
				all = append(all, s)
			}
		}
	}
	if len(all) == 0 {
		return &Redactor{}
	}
	sort.Slice(all, func(i, j int) bool {
		if len(all[i]) != len(all[j]) {
			return len(all[i]) > len(all[j])
		}
		return all[i] < all[j]
	})
	pairs := make([]string, 0, 2*len(all))
	for _, s := range all {
		pairs = append(pairs, s, Mask)
	}
	return &Redactor{r: strings.NewReplacer(pairs...)}
}

// String returns s with every secret masked.
func (r *Redactor) String(s string) string {
	if r == nil || r.r == nil {
		return s
	}
	return r.r.Replace(s)
}

// Ptr redacts an optional string.
func (r *Redactor) Ptr(s *string) *string {
	if s == nil {
		return nil
	}
	v := r.String(*s)
	return &v
}

// Empty reports whether r masks nothing.
func (r *Redactor) Empty() bool { return r == nil || r.r == nil }

// Error returns err with its message redacted; errors.Is and errors.As still
// see the original chain (a cancellation, a transience verdict).
func (r *Redactor) Error(err error) error {
	if err == nil || r.Empty() {
		return err
	}
	return &redactedError{msg: r.String(err.Error()), err: err}
}

// redactedError carries a redacted message over the original error.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// Args masks secrets in slog key-value arguments; a value that is not a
// string is masked in its printed form (and kept as it is when that shows no
// secret).
func (r *Redactor) Args(args []any) []any {
	if r.Empty() {
		return args
	}
	out := make([]any, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case string:
			out[i] = r.String(v)
		case nil, bool:
			out[i] = v
		default:
			text := fmt.Sprint(v)
			if masked := r.String(text); masked != text {
				out[i] = masked
			} else {
				out[i] = v
			}
		}
	}
	return out
}
