package templates

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/faucet-dev/faucet/db"
)

// The derived channels: computed from the launch log and the versions,
// never assigned.
const (
	// Stable is the launched version, and what an unpinned request uses.
	Stable = "stable"
	// Previous is the version launched before stable: the rollback target.
	Previous = "previous"
	// Newest is the highest version number, launched or not.
	Newest = "newest"
)

// Channels are every channel name: the derived ones, then the assignable
// ones (db.TemplateChannels) in promotion order.
var Channels = append([]string{Stable, Previous, Newest}, db.TemplateChannels...)

// Selector picks a version: a channel or an exact number. The zero value
// is stable, so a caller that never names a version rides the launched one.
type Selector struct {
	Channel string
	Version int
}

// Pinned selects one version.
func Pinned(v int) Selector { return Selector{Version: v} }

// Channel selects a channel's version.
func Channel(name string) Selector { return Selector{Channel: name} }

func (s Selector) String() string {
	switch {
	case s.Version > 0:
		return strconv.Itoa(s.Version)
	case s.Channel == "":
		return Stable
	}
	return s.Channel
}

// ParseSelector reads a channel name or a version number. Channel names
// are read forgivingly (PreProd, pre_prod and pre-prod are one channel),
// but the set is closed: an unknown name is refused rather than read as a
// channel nobody watches, and latest, which reads as both stable and
// newest, is refused naming both.
func ParseSelector(raw string) (Selector, error) {
	s := strings.TrimSpace(raw)
	if s != "" && strings.Trim(s, "0123456789") == "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			return Selector{}, fmt.Errorf("version %q: versions are numbered from 1", raw)
		}
		return Pinned(v), nil
	}
	c, err := ParseChannel(s)
	if err != nil {
		return Selector{}, err
	}
	return Channel(c), nil
}

// ParseChannel reads a channel name (see ParseSelector).
func ParseChannel(raw string) (string, error) {
	n := normalize(raw)
	if n == "latest" {
		return "", fmt.Errorf("latest is not a channel: it could mean %s (the launched version, used when no version is given) or %s (the highest version number, launched or not); name one of them", Stable, Newest)
	}
	for _, c := range Channels {
		if normalize(c) == n {
			return c, nil
		}
	}
	return "", fmt.Errorf("unknown channel %q: the channels are %s", raw, strings.Join(Channels, ", "))
}

// ParseAssignable reads a channel a version can be assigned to: the derived
// ones are refused, saying how each moves.
func ParseAssignable(raw string) (string, error) {
	c, err := ParseChannel(raw)
	if err != nil {
		return "", err
	}
	var how string
	switch c {
	case Stable:
		how = "it moves only by launching a version"
	case Previous:
		how = "it is the version launched before the live one"
	case Newest:
		how = "it is always the highest version number"
	default:
		return c, nil
	}
	return "", fmt.Errorf("%s is a derived channel and cannot be assigned: %s; the assignable channels are %s", c, how, strings.Join(db.TemplateChannels, ", "))
}

// normalize lowercases a channel name and drops everything but letters and
// digits, so every spelling of one channel compares equal.
func normalize(s string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(strings.TrimSpace(s)) {
		if ('a' <= c && c <= 'z') || ('0' <= c && c <= '9') {
			b.WriteRune(c)
		}
	}
	return b.String()
}

// resolve turns sel into a version of the template in st. A version that
// does not exist is ErrNotFound; a channel with nothing behind it is a
// Conflict saying how to set it: it never falls back to another version,
// which would run what the caller did not ask for.
func resolve(id string, st db.TemplateState, sel Selector) (int, error) {
	if sel.Version > 0 {
		if !slices.Contains(st.Versions, sel.Version) {
			return 0, notFound("version %d of template %s", sel.Version, id)
		}
		return sel.Version, nil
	}
	var v *int
	switch sel.Channel {
	case "", Stable:
		v = st.Stable
		if v == nil {
			return 0, conflict("template %s has no launched version (it is a draft): launch one (faucet template launch %s %d), or select newest or a version number", id, id, *st.Newest)
		}
	case Previous:
		v = st.Previous
		if v == nil {
			return 0, conflict("template %s has no previous version: previous is the version launched before the live one, and there has been no launch of another version", id)
		}
	case Newest:
		v = st.Newest
	default:
		if n, ok := st.Tags[sel.Channel]; ok {
			v = &n
		} else {
			return 0, conflict("template %s has no version on channel %s: promote one (faucet template promote %s %s N)", id, sel.Channel, id, sel.Channel)
		}
	}
	return *v, nil
}
