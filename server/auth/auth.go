// Package auth decides who calls the faucet serve API and what they may do:
// bearer tokens mapped to principals, each with a role (viewer < operator <
// admin).
package auth

import (
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"
)

// Role orders what a principal may do; a higher role includes every
// permission of the lower ones.
type Role int

// The roles. Viewers read runs and logs, operators also submit, cancel and
// delete runs, admins also read the audit log.
const (
	Viewer Role = iota + 1
	Operator
	Admin
)

// String returns the wire name of the role.
func (r Role) String() string {
	switch r {
	case Viewer:
		return "viewer"
	case Operator:
		return "operator"
	case Admin:
		return "admin"
	}
	return fmt.Sprintf("Role(%d)", int(r))
}

// MarshalText writes the wire name, so the API serves roles as it spells
// them.
func (r Role) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads a wire name.
func (r *Role) UnmarshalText(b []byte) error {
	role, err := ParseRole(string(b))
	if err != nil {
		return err
	}
	*r = role
	return nil
}

// Allows reports whether r includes the permissions of need.
func (r Role) Allows(need Role) bool { return r >= need }

// ParseRole parses a wire role name.
func ParseRole(s string) (Role, error) {
	switch s {
	case "viewer":
		return Viewer, nil
	case "operator":
		return Operator, nil
	case "admin":
		return Admin, nil
	}
	return 0, fmt.Errorf("unknown role %q (want viewer, operator or admin)", s)
}

// Principal is an authenticated caller.
type Principal struct {
	Name string
	Role Role
}

// Anonymous is the principal of every request when auth is off.
var Anonymous = Principal{Name: "anonymous", Role: Admin}

type entry struct {
	principal Principal
	digest    [sha256.Size]byte
}

// Authenticator maps bearer tokens to principals. Tokens are kept only as
// SHA-256 digests, compared in constant time against every entry, so neither
// the comparison nor the position of a match leaks through timing.
type Authenticator struct {
	entries []entry
	// open is set when auth is off: every request is Anonymous.
	open bool
	// secrets are the raw tokens, kept for redaction only.
	secrets []string
}

// ErrNoPrincipals is returned for an auth config with no principals, which
// would lock everyone out.
var ErrNoPrincipals = errors.New("auth config defines no principals")

// Disabled returns an Authenticator that admits every request as Anonymous.
func Disabled() *Authenticator { return &Authenticator{open: true} }

// Token returns an Authenticator with one admin principal named "token".
func Token(token string) (*Authenticator, error) {
	return New([]PrincipalConfig{{Name: "token", Token: token, Role: "admin"}})
}

// New builds an Authenticator from principal definitions. Names and tokens
// must be unique and tokens non-empty.
func New(ps []PrincipalConfig) (*Authenticator, error) {
	if len(ps) == 0 {
		return nil, ErrNoPrincipals
	}
	a := &Authenticator{}
	names := map[string]bool{}
	digests := map[[sha256.Size]byte]string{}
	for i, p := range ps {
		if strings.TrimSpace(p.Name) == "" {
			return nil, fmt.Errorf("principals[%d]: name is empty", i)
		}
		if names[p.Name] {
			return nil, fmt.Errorf("principals[%d]: duplicate name %q", i, p.Name)
		}
		names[p.Name] = true
		if p.Token == "" {
			return nil, fmt.Errorf("principals[%d] (%s): token is empty", i, p.Name)
		}
		role, err := ParseRole(p.Role)
		if err != nil {
			return nil, fmt.Errorf("principals[%d] (%s): %w", i, p.Name, err)
		}
		d := sha256.Sum256([]byte(p.Token))
		if other, dup := digests[d]; dup {
			return nil, fmt.Errorf("principals[%d] (%s): token already used by %q", i, p.Name, other)
		}
		digests[d] = p.Name
		a.entries = append(a.entries, entry{principal: Principal{Name: p.Name, Role: role}, digest: d})
		a.secrets = append(a.secrets, p.Token)
	}
	return a, nil
}

// Enabled reports whether requests must carry a token.
func (a *Authenticator) Enabled() bool { return !a.open }

// Secrets returns the raw tokens, for redaction from logs and records.
func (a *Authenticator) Secrets() []string { return append([]string(nil), a.secrets...) }

// Authenticate resolves an Authorization header value. Only the Bearer scheme
// is accepted.
func (a *Authenticator) Authenticate(header string) (Principal, bool) {
	if a.open {
		return Anonymous, true
	}
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return Principal{}, false
	}
	token = strings.TrimSpace(token)
	if token == "" {
		return Principal{}, false
	}
	d := sha256.Sum256([]byte(token))
	found := -1
	for i := range a.entries {
		if subtle.ConstantTimeCompare(d[:], a.entries[i].digest[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return Principal{}, false
	}
	return a.entries[found].principal, true
}
