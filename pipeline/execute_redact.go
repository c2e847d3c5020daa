package pipeline

import (
	"sort"
	"strings"
)

// redacted replaces every secret in the messages the executor produces.
const redacted = "[REDACTED]"

// NewRedactor returns a replacer that masks every non-empty secret of the
// given sets as "[REDACTED]", the longest first so a secret that contains
// another is masked whole. The plugin host masks connector output with it.
func NewRedactor(sets ...[]string) *strings.Replacer {
	var s []string
	seen := map[string]bool{}
	for _, set := range sets {
		for _, v := range set {
			if v != "" && !seen[v] {
				seen[v] = true
				s = append(s, v)
			}
		}
	}
	sort.SliceStable(s, func(i, j int) bool { return len(s[i]) > len(s[j]) })
	pairs := make([]string, 0, 2*len(s))
	for _, v := range s {
		pairs = append(pairs, v, redacted)
	}
	return strings.NewReplacer(pairs...)
}

// redactedError carries a redacted message while errors.Is and errors.As
// still see the original chain (context.Canceled, ErrNotRun, transience).
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

func redactError(r *strings.Replacer, err error) error {
	return &redactedError{msg: r.Replace(err.Error()), err: err}
}
