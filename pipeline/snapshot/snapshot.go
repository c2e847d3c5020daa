// Package snapshot describes a pipeline as its run executed it — the
// settings, and for every matrix row its connectors with their resolved
// configs — with every secret replaced by a fingerprint, and diffs two such
// descriptions. faucet serve records one per run; faucet plan --diff builds
// one from a config file and shows what would change against the last.
package snapshot

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"sort"
	"strings"

	"github.com/faucet-dev/faucet/pipeline"
)

// Doc is a pipeline's snapshot. It holds no secret: each is replaced by a
// fingerprint keyed by Salt, so a changed secret shows as a changed
// fingerprint while neither value is ever stored or printed, and the salt
// keeps a fingerprint from being looked up in a table of common values.
type Doc struct {
	Pipeline string         `json:"pipeline"`
	Salt     string         `json:"secret_salt"`
	Settings Settings       `json:"settings"`
	Rows     map[string]Row `json:"rows"`
}

// Settings are faucet's own fields of the config.
type Settings struct {
	MaxConcurrent       int    `json:"max_concurrent"`
	OnError             string `json:"on_error"`
	Delivery            string `json:"delivery"`
	RetryMaxAttempts    int    `json:"retry_max_attempts"`
	RetryInitialBackoff string `json:"retry_initial_backoff"`
	RetryMaxBackoff     string `json:"retry_max_backoff"`
	ShardCount          int    `json:"shard_count,omitempty"`
}

// Row is one matrix row (invocation): its connectors and the write mode
// its sink resolves to.
type Row struct {
	Source        Connector `json:"source"`
	Sink          Connector `json:"sink"`
	SinkWriteMode string    `json:"sink_write_mode,omitempty"`
}

// Connector is a connector and its resolved, redacted config.
type Connector struct {
	Type   string         `json:"type"`
	Config map[string]any `json:"config"`
}

// NewSalt returns a fresh salt for a snapshot's fingerprints.
func NewSalt() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Of describes plan under the name pipeline, fingerprinting its secrets
// with salt (a stored snapshot's, to compare with it, or NewSalt's).
func Of(plan *pipeline.Plan, name, salt string) Doc {
	d := Doc{
		Pipeline: name, Salt: salt, Rows: map[string]Row{},
		Settings: Settings{
			MaxConcurrent: plan.Execution.MaxConcurrent, OnError: string(plan.Execution.OnError), Delivery: plan.Delivery,
			RetryMaxAttempts: plan.Retry.MaxAttempts, RetryInitialBackoff: plan.Retry.InitialBackoff.String(), RetryMaxBackoff: plan.Retry.MaxBackoff.String(),
		},
	}
	if plan.Shard != nil {
		d.Settings.ShardCount = plan.Shard.Count
	}
	r := newRedactor(plan.Secrets, salt)
	for _, inv := range plan.Invocations {
		d.Rows[inv.RowID] = Row{
			Source:        Connector{Type: inv.Source.Type, Config: r.config(inv.Source.Config)},
			Sink:          Connector{Type: inv.Sink.Type, Config: r.config(inv.Sink.Config)},
			SinkWriteMode: inv.SinkWriteMode,
		}
	}
	return d
}

// Key identifies what Of reads of plan under the name pipeline, secrets
// included, without building the snapshot: equal keys make equal snapshots
// but for the salt. A server keys its cache of encoded snapshots by it, so
// it reads every field Of reads, and only those.
func Key(plan *pipeline.Plan, name string) string {
	b := make([]byte, 0, 512)
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	raw := func(p []byte) {
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
	}
	num := func(n int64) { b = binary.AppendVarint(b, n) }
	str(name)
	num(int64(plan.Execution.MaxConcurrent))
	str(string(plan.Execution.OnError))
	str(plan.Delivery)
	num(int64(plan.Retry.MaxAttempts))
	num(int64(plan.Retry.InitialBackoff))
	num(int64(plan.Retry.MaxBackoff))
	shards := int64(-1)
	if plan.Shard != nil {
		shards = int64(plan.Shard.Count)
	}
	num(shards)
	num(int64(len(plan.Secrets)))
	for _, secret := range plan.Secrets {
		str(secret)
	}
	num(int64(len(plan.Invocations)))
	for _, inv := range plan.Invocations {
		str(inv.RowID)
		str(inv.Source.Type)
		raw(inv.Source.Config)
		str(inv.Sink.Type)
		raw(inv.Sink.Config)
		str(inv.SinkWriteMode)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Marshal is d as stored.
func (d Doc) Marshal() json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(d)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// Parse reads a stored snapshot.
func Parse(b []byte) (Doc, error) {
	var d Doc
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	err := dec.Decode(&d)
	return d, err
}

// fingerprintPrefix starts every secret's fingerprint in a snapshot.
const fingerprintPrefix = "<secret:"

// redactor replaces secrets with their fingerprints.
type redactor struct {
	secrets []string
	salt    []byte
}

func newRedactor(secrets []string, salt string) *redactor {
	s := append([]string(nil), secrets...)
	// The longest first, so a secret containing another is replaced whole.
	sort.SliceStable(s, func(i, j int) bool { return len(s[i]) > len(s[j]) })
	return &redactor{secrets: s, salt: []byte(salt)}
}

func (r *redactor) fingerprint(secret string) string {
	m := hmac.New(sha256.New, r.salt)
	m.Write([]byte(secret))
	return fingerprintPrefix + hex.EncodeToString(m.Sum(nil))[:12] + ">"
}

// config decodes a connector config with its secrets replaced.
func (r *redactor) config(raw json.RawMessage) map[string]any {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v map[string]any
	if dec.Decode(&v) != nil || v == nil {
		return map[string]any{}
	}
	out, _ := r.value(v).(map[string]any)
	return out
}

func (r *redactor) value(v any) any {
	switch t := v.(type) {
	case string:
		for _, s := range r.secrets {
			if s != "" && strings.Contains(t, s) {
				t = strings.ReplaceAll(t, s, r.fingerprint(s))
			}
		}
		return t
	case []any:
		for i := range t {
			t[i] = r.value(t[i])
		}
		return t
	case map[string]any:
		for k, e := range t {
			t[k] = r.value(e)
		}
		return t
	}
	return v
}
