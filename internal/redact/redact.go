// Package redact removes secret values — API tokens, secret connector fields,
// interpolated ${env:…} values — from any text faucet serve shows or stores.
package redact

import (
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
