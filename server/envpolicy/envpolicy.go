// Package envpolicy decides what ${env:NAME} may resolve to in the configs
// faucet serve runs. A config arrives over HTTP from whoever holds an
// operator token, so the server's environment (its credentials, its cloud
// tokens) is not theirs to read: only the names the operator allowed
// resolve, from --config-env (a NAME, or a PREFIX_* pattern) and from the
// variables of an env file (--env-file, or .env in the working directory
// unless --no-env-file). Any other name is refused when the config is
// loaded, never resolved to an empty string. Every value an allowed name
// has is a secret of every run, so no run's records, logs or errors show
// it, whichever run read it.
package envpolicy

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// DefaultEnvFile is the env file read when --env-file is not given: this
// name in the server's working directory, when it exists (as the Rust
// faucet does).
const DefaultEnvFile = ".env"

// Config is the operator's choice of what configs may read.
type Config struct {
	// Names are the --config-env entries: NAME, or PREFIX_* for every name
	// that starts with PREFIX_ ("*" alone allows every name).
	Names []string
	// EnvFile is --env-file: its variables are allowed, and they resolve
	// when the process environment does not set them. It must exist.
	EnvFile string
	// NoEnvFile skips the default env file.
	NoEnvFile bool
	// Dir is where the default env file is looked for; "" is the working
	// directory.
	Dir string
	// Environ lists the process environment ("NAME=value"); nil means
	// os.Environ.
	Environ []string
}

// Policy resolves ${env:NAME} for the configs of one server.
type Policy struct {
	env      map[string]string
	exact    map[string]bool
	prefixes []string
	file     map[string]string
	fileName string
}

var name = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// New checks the --config-env entries and reads the env file.
func New(cfg Config) (*Policy, error) {
	environ := cfg.Environ
	if environ == nil {
		environ = os.Environ()
	}
	p := &Policy{env: map[string]string{}, exact: map[string]bool{}, file: map[string]string{}}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok {
			p.env[k] = v
		}
	}
	for _, n := range cfg.Names {
		if prefix, ok := strings.CutSuffix(n, "*"); ok {
			if prefix != "" && !name.MatchString(prefix) {
				return nil, fmt.Errorf("--config-env %q: a pattern is a name prefix followed by *, such as PG_*", n)
			}
			p.prefixes = append(p.prefixes, prefix)
			continue
		}
		if !name.MatchString(n) {
			return nil, fmt.Errorf("--config-env %q: not an environment variable name (letters, digits and _, not starting with a digit)", n)
		}
		p.exact[n] = true
	}
	if cfg.NoEnvFile && cfg.EnvFile != "" {
		return nil, errors.New("choose one of --env-file and --no-env-file")
	}
	file := cfg.EnvFile
	if file == "" && !cfg.NoEnvFile {
		def := filepath.Join(cfg.Dir, DefaultEnvFile)
		if _, err := os.Stat(def); err == nil {
			file = def
		}
	}
	if file != "" {
		vars, err := readEnvFile(file)
		if err != nil {
			return nil, err
		}
		abs, err := filepath.Abs(file)
		if err != nil {
			return nil, fmt.Errorf("env file %s: %w", file, err)
		}
		p.file, p.fileName = vars, abs
	}
	return p, nil
}

// EnvFile is the env file the policy read, absolute; "" when none.
func (p *Policy) EnvFile() string { return p.fileName }

// Allowed refuses a name the operator did not allow.
func (p *Policy) Allowed(n string) error {
	if p.allows(n) {
		return nil
	}
	return fmt.Errorf("environment variable %s is not one this server lets configs read: "+
		"its operator allows names with --config-env NAME (or PREFIX_*) and the variables of --env-file", n)
}

func (p *Policy) allows(n string) bool {
	if p.exact[n] {
		return true
	}
	if _, ok := p.file[n]; ok {
		return true
	}
	for _, prefix := range p.prefixes {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}

// Lookup resolves an allowed name: the process environment first, then the
// env file (whose values never override the process's, as the Rust faucet
// loads them). A refused name is unset.
func (p *Policy) Lookup(n string) (string, bool) {
	if !p.allows(n) {
		return "", false
	}
	return p.lookupAny(n)
}

// LookupAny resolves any name from the process environment and the env
// file, for the operator's own files (the auth config's tokens).
func (p *Policy) LookupAny(n string) (string, bool) { return p.lookupAny(n) }

func (p *Policy) lookupAny(n string) (string, bool) {
	if v, ok := p.env[n]; ok {
		return v, true
	}
	v, ok := p.file[n]
	return v, ok
}

// Values returns every non-empty value an allowed name has: the secrets
// every run's records, logs and errors are masked of.
func (p *Policy) Values() []string {
	seen := map[string]bool{}
	var out []string
	add := func(v string) {
		if v != "" && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	for n, v := range p.env {
		if p.allows(n) {
			add(v)
		}
	}
	for n := range p.file {
		v, _ := p.lookupAny(n)
		add(v)
	}
	slices.Sort(out)
	return out
}

// readEnvFile parses a dotenv file: NAME=value lines, an optional export
// before the name, # comments, and values in double quotes (with \n, \t,
// \" and \\ escapes) or single quotes (taken literally). A line that does
// not parse is an error naming its number, never its text, which may hold
// a secret.
func readEnvFile(file string) (map[string]string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("env file: %w", err)
	}
	vars := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || !name.MatchString(k) {
			return nil, fmt.Errorf("env file %s, line %d: want NAME=value", file, n)
		}
		val, err := envValue(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("env file %s, line %d (%s): %w", file, n, k, err)
		}
		vars[k] = val
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("env file %s: %w", file, err)
	}
	return vars, nil
}

// envValue is the value of a NAME=value line.
func envValue(v string) (string, error) {
	switch {
	case strings.HasPrefix(v, `"`):
		end := closingQuote(v)
		if end < 0 {
			return "", errors.New("unterminated double quote")
		}
		s, err := strconv.Unquote(v[:end+1])
		if err != nil {
			return "", errors.New("bad escape in a double-quoted value")
		}
		return s, nil
	case strings.HasPrefix(v, "'"):
		end := strings.IndexByte(v[1:], '\'')
		if end < 0 {
			return "", errors.New("unterminated single quote")
		}
		return v[1 : end+1], nil
	}
	if i := strings.Index(v, " #"); i >= 0 {
		v = v[:i]
	}
	return strings.TrimSpace(v), nil
}

// closingQuote is the index of the double quote closing the one v starts
// with, skipping escaped ones; -1 when there is none.
func closingQuote(v string) int {
	for i := 1; i < len(v); i++ {
		switch v[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -1
}
