// Package generate is the built-in synthetic source: count deterministic
// rows in faucet's benchmark shape (id, first_name, country, amount,
// created_at, active, attributes). Row i depends only on the seed and i, so
// any split into id ranges reproduces exactly the rows of an unsplit run.
package generate

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/faucet-dev/faucet/plugins/builtin/internal/configmemo"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// Connector is the generate connector.
type Connector struct{}

const sourceSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "required": ["count"],
  "properties": {
    "count": {"type": "integer", "minimum": 0, "examples": [1000], "description": "How many rows to generate; ids run from 1 to count."},
    "seed": {"type": "integer", "default": 1, "description": "The same seed always gives the same rows."}
  }
}`

// Spec describes the connector.
func (Connector) Spec() sdk.Spec {
	return sdk.Spec{
		Name:         "generate",
		Version:      "1.0.0",
		Description:  "Deterministic synthetic rows for tests and benchmarks.",
		SourceSchema: json.RawMessage(sourceSchema),
		Shardable:    true,
	}
}

// Config is the generate source's config.
type Config struct {
	Count int64  `json:"count"`
	Seed  *int64 `json:"seed"`
}

// idRange is the shard descriptor: ids From..To inclusive.
type idRange struct {
	From int64 `json:"from"`
	To   int64 `json:"to"`
}

func decode(config json.RawMessage) (Config, int64, error) {
	var cfg Config
	if err := sdk.DecodeConfig(config, &cfg); err != nil {
		return cfg, 0, err
	}
	seed := int64(1)
	if cfg.Seed != nil {
		seed = *cfg.Seed
	}
	return cfg, seed, nil
}

// Datasets names the generated rows by their seed: the rows of one seed are
// one dataset, of which a count reads a prefix.
func (Connector) Datasets(_ context.Context, req sdk.DatasetsRequest) ([]sdk.Dataset, error) {
	uri, err := uris.Get(req.Config, func(config []byte) (string, error) {
		_, seed, err := decode(config)
		return "generate:seed=" + strconv.FormatInt(seed, 10), err
	})
	if err != nil {
		return nil, err
	}
	return []sdk.Dataset{{URI: uri}}, nil
}

// uris are the dataset URIs of the configs Datasets was asked about.
var uris = configmemo.New[string]()

// Shards splits the ids into count contiguous ranges of near-equal size.
func (Connector) Shards(_ context.Context, config json.RawMessage, count int) ([]sdk.Shard, error) {
	cfg, _, err := decode(config)
	if err != nil {
		return nil, err
	}
	count = int(min(int64(max(count, 1)), max(cfg.Count, 1)))
	shards := make([]sdk.Shard, 0, count)
	for i := range int64(count) {
		r := idRange{From: cfg.Count*i/int64(count) + 1, To: cfg.Count * (i + 1) / int64(count)}
		desc, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		shards = append(shards, sdk.Shard{Descriptor: desc, EstimatedRecords: r.To - r.From + 1})
	}
	return shards, nil
}

// Read emits the rows of the whole id range or of the shard's.
func (Connector) Read(ctx context.Context, req sdk.ReadRequest, w *sdk.BatchWriter) error {
	cfg, seed, err := decode(req.Config)
	if err != nil {
		return err
	}
	r := idRange{From: 1, To: cfg.Count}
	if req.Shard != nil {
		if err := json.Unmarshal(req.Shard.Descriptor, &r); err != nil {
			return fmt.Errorf("decode shard descriptor: %w", err)
		}
	}
	for id := r.From; id <= r.To; id++ {
		if id%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if err := w.AppendFunc(func(dst []byte) ([]byte, error) { return AppendRow(dst, seed, id), nil }); err != nil {
			return err
		}
	}
	return nil
}

var (
	firstNames = []string{"Ada", "Alan", "Barbara", "Claude", "Dennis", "Edsger", "Frances", "Grace", "Hedy", "Ivan", "Jean", "Ken", "Leslie", "Margaret", "Niklaus", "Ole-Johan", "Radia", "Sophie", "Tim", "Zoë"}
	countries  = []string{"AR", "AU", "BR", "CA", "CN", "DE", "ES", "FR", "GB", "IN", "IT", "JP", "KE", "MX", "NG", "NL", "NO", "PL", "SE", "US"}
	tiers      = []string{"bronze", "silver", "gold", "platinum"}
	tags       = []string{"new", "returning", "vip", "trial", "churn-risk", "referral"}
	epoch      = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
)

// splitmix64 is a tiny, high-quality mixer: it turns (seed, id, field) into
// an independent pseudo-random word without any shared generator state.
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// AppendRow appends row id of the dataset seed generates, as a JSON object.
// The benchmark dataset generator writes the same rows as CSV.
func AppendRow(dst []byte, seed, id int64) []byte {
	r := RowOf(seed, id)
	dst = append(dst, `{"id":`...)
	dst = strconv.AppendInt(dst, r.ID, 10)
	dst = append(dst, `,"first_name":`...)
	dst = sdk.AppendString(dst, r.FirstName)
	dst = append(dst, `,"country":"`...)
	dst = append(dst, r.Country...)
	dst = append(dst, `","amount":`...)
	dst = r.appendAmount(dst)
	dst = append(dst, `,"created_at":"`...)
	dst = r.CreatedAt.AppendFormat(dst, time.RFC3339)
	dst = append(dst, `","active":`...)
	dst = strconv.AppendBool(dst, r.Active)
	dst = append(dst, `,"attributes":`...)
	dst = r.AppendAttributes(dst)
	return append(dst, '}')
}

// Row is one generated row.
type Row struct {
	ID        int64
	FirstName string
	Country   string
	// AmountCents is the amount in hundredths, so it prints exactly.
	AmountCents int64
	CreatedAt   time.Time
	Active      bool
	Tier        string
	Score       int64
	Tags        [2]string
}

// RowOf computes row id of the dataset seed generates.
func RowOf(seed, id int64) Row {
	h := splitmix64(uint64(seed)*0x2545f4914f6cdd1d ^ uint64(id))
	g := splitmix64(h)
	return Row{
		ID:          id,
		FirstName:   firstNames[h%uint64(len(firstNames))],
		Country:     countries[(h>>8)%uint64(len(countries))],
		AmountCents: int64((h >> 16) % 1_000_000),
		CreatedAt:   time.Unix(epoch+int64(g%(366*24*3600)), 0).UTC(),
		Active:      (g>>32)&1 == 1,
		Tier:        tiers[(g>>40)%uint64(len(tiers))],
		Score:       int64((g >> 44) % 1000),
		Tags:        [2]string{tags[(g>>54)%uint64(len(tags))], tags[(g>>58)%uint64(len(tags))]},
	}
}

func (r Row) appendAmount(dst []byte) []byte {
	dst = strconv.AppendInt(dst, r.AmountCents/100, 10)
	dst = append(dst, '.')
	c := r.AmountCents % 100
	if c < 10 {
		dst = append(dst, '0')
	}
	return strconv.AppendInt(dst, c, 10)
}

// Amount is the amount as decimal text ("1234.05").
func (r Row) Amount() string { return string(r.appendAmount(nil)) }

// AppendAttributes appends the row's nested attributes object as JSON.
func (r Row) AppendAttributes(dst []byte) []byte {
	dst = append(dst, `{"tier":"`...)
	dst = append(dst, r.Tier...)
	dst = append(dst, `","score":`...)
	dst = strconv.AppendInt(dst, r.Score, 10)
	dst = append(dst, `,"tags":["`...)
	dst = append(dst, r.Tags[0]...)
	dst = append(dst, `","`...)
	dst = append(dst, r.Tags[1]...)
	return append(dst, `"]}`...)
}
