package callbacks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/server/metrics"
)

// Config configures a Dispatcher. Zero values take the defaults below.
type Config struct {
	// Policy is checked again at delivery: the URL against the server's
	// current allow-list, the resolved addresses against the refused ones.
	Policy Policy
	// Secret, when set, signs every body (SignatureHeader).
	Secret []byte
	// MaxAttempts bounds the attempts of a delivery, a claim whose
	// process died counting as one; then it is failed. Every member sharing
	// a history must use the same.
	MaxAttempts int
	// MaxConcurrent bounds the attempts in flight on this process.
	MaxConcurrent int
	// AttemptTimeout bounds one attempt, from resolving the target to
	// reading its answer.
	AttemptTimeout time.Duration
	// Poll is how often the dispatcher looks for due deliveries nobody woke
	// it for: retries, and deliveries other processes wrote.
	Poll time.Duration
	// BackoffBase and BackoffMax shape the delay before a retry: the
	// base doubled per attempt, capped, jittered between half and all of it.
	BackoffBase, BackoffMax time.Duration
	// Env resolves ${env:NAME} header values at delivery; nil means the
	// process environment.
	Env func(string) (string, bool)
	// Version goes into the User-Agent.
	Version string
	// Resolver resolves targets; nil means net.DefaultResolver.
	Resolver Resolver
	// Clock is the dispatcher's time; nil means time.Now.
	Clock   func() time.Time
	Logger  *slog.Logger
	Metrics *metrics.Metrics
}

// Defaults for Config.
const (
	DefaultMaxAttempts    = 8
	DefaultMaxConcurrent  = 16
	DefaultAttemptTimeout = 10 * time.Second
	DefaultPoll           = time.Second
	DefaultBackoffBase    = time.Second
	DefaultBackoffMax     = 5 * time.Minute
)

// Bounds of an attempt, whatever the configuration.
const (
	// maxBodyBytes bounds the body: the run's labels and error and the
	// extra fields are bounded, so only a history written outside faucet
	// could exceed it.
	maxBodyBytes = 512 << 10
	// maxAnswerBytes of the target's answer are read (and dropped), so its
	// connection can be reused.
	maxAnswerBytes = 64 << 10
	// maxErrorText bounds the error an attempt records.
	maxErrorText = 512
	// settleTimeout bounds the write of an attempt's outcome.
	settleTimeout = 10 * time.Second
)

func (c Config) withDefaults() Config {
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.MaxConcurrent <= 0 {
		c.MaxConcurrent = DefaultMaxConcurrent
	}
	if c.AttemptTimeout <= 0 {
		c.AttemptTimeout = DefaultAttemptTimeout
	}
	if c.Poll <= 0 {
		c.Poll = DefaultPoll
	}
	if c.BackoffBase <= 0 {
		c.BackoffBase = DefaultBackoffBase
	}
	if c.BackoffMax <= 0 {
		c.BackoffMax = DefaultBackoffMax
	}
	if c.Env == nil {
		c.Env = os.LookupEnv
	}
	if c.Resolver == nil {
		c.Resolver = net.DefaultResolver
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Store is the part of the history a Dispatcher uses.
type Store interface {
	CallbackClaim(ctx context.Context, limit int, lease time.Duration, maxAttempts int) (db.CallbackClaims, error)
	CallbackSettle(ctx context.Context, r db.CallbackResult) (bool, error)
}

// Dispatcher delivers the outbox's callbacks: it claims due deliveries
// (exclusively across processes, with a lease a dead process's claim
// lapses from), sends each, and records the outcome fenced on still
// holding the claim. A delivery is sent at least once: a process that dies
// after the target answered but before its outcome was written leaves a
// claim a peer takes over, and the target hears it again, under the same
// Faucet-Delivery-Id.
type Dispatcher struct {
	cfg    Config
	store  Store
	client *http.Client
	lease  time.Duration

	wake  chan struct{}
	freed chan struct{}

	mu       sync.Mutex
	inFlight int
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

// New returns a dispatcher over store.
func New(cfg Config, store Store) *Dispatcher {
	cfg = cfg.withDefaults()
	return &Dispatcher{
		cfg: cfg, store: store,
		client: guardedClient(cfg.Policy, cfg.Resolver, cfg.AttemptTimeout),
		// An attempt ends within its timeout; the settle after it has its
		// own. A claim outliving both is a process that died.
		lease: 2*cfg.AttemptTimeout + settleTimeout,
		wake:  make(chan struct{}, 1), freed: make(chan struct{}, 1),
	}
}

// Start starts delivering until Stop.
func (d *Dispatcher) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d.mu.Lock()
	d.cancel = cancel
	d.mu.Unlock()
	d.wg.Go(func() { d.loop(ctx) })
	return nil
}

// Stop interrupts the attempts in flight and waits for them: each is given
// back due at once, for a peer or the next start.
func (d *Dispatcher) Stop() {
	d.mu.Lock()
	cancel := d.cancel
	d.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	d.wg.Wait()
}

// Finalized tells the dispatcher that rec just became terminal here: with a
// callback its delivery is due, and the dispatcher looks for it now rather
// than at its next poll. A run without one has no delivery row, and a wake
// for it would cost a claim statement for nothing.
func (d *Dispatcher) Finalized(rec *db.RunRecord) {
	if len(rec.Callback) > 0 {
		signal(d.wake)
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (d *Dispatcher) loop(ctx context.Context) {
	poll := time.NewTimer(0)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.wake:
		case <-d.freed:
		case <-poll.C:
		}
		d.claim(ctx)
		poll.Reset(d.cfg.Poll)
	}
}

// claim takes as many due deliveries as there are free slots, and again
// while a claim fills them all.
func (d *Dispatcher) claim(ctx context.Context) {
	for ctx.Err() == nil {
		d.mu.Lock()
		free := d.cfg.MaxConcurrent - d.inFlight
		d.mu.Unlock()
		if free <= 0 {
			return
		}
		got, err := d.store.CallbackClaim(ctx, free, d.lease, d.cfg.MaxAttempts)
		if err != nil {
			if ctx.Err() == nil {
				d.cfg.Logger.Warn("claim callback deliveries", "error", err)
			}
			return
		}
		if got.Exhausted > 0 {
			d.cfg.Logger.Warn("callback deliveries failed: their last attempt never reported back", "count", got.Exhausted)
			d.count("failed", got.Exhausted)
		}
		for _, c := range got.Claimed {
			d.mu.Lock()
			d.inFlight++
			d.mu.Unlock()
			d.gauge()
			d.wg.Go(func() { d.deliver(ctx, c) })
		}
		if len(got.Claimed) < free {
			return
		}
	}
}

func (d *Dispatcher) deliver(ctx context.Context, c db.ClaimedCallback) {
	defer func() {
		d.mu.Lock()
		d.inFlight--
		d.mu.Unlock()
		d.gauge()
		signal(d.freed)
	}()
	start := d.cfg.Clock()
	out := d.attempt(ctx, c)
	if m := d.cfg.Metrics; m != nil {
		m.CallbackAttempt.Observe(d.cfg.Clock().Sub(start).Seconds())
	}
	res := db.CallbackResult{DeliveryID: c.Delivery.DeliveryID, Attempt: c.Delivery.Attempts, StatusCode: out.code}
	if out.err != "" {
		res.Error = &out.err
	}
	log := d.cfg.Logger.With("run_id", c.Run.RunID, "delivery_id", c.Delivery.DeliveryID, "attempt", c.Delivery.Attempts)
	switch {
	case out.err == "":
		res.State = db.CallbackDelivered
	case out.retry && c.Delivery.Attempts < d.cfg.MaxAttempts:
		res.State = db.CallbackPending
		res.RetryAt = d.cfg.Clock().Add(d.backoff(c.Delivery.Attempts, out.retryAfter))
		if out.interrupted {
			res.RetryAt = d.cfg.Clock()
		}
	default:
		res.State = db.CallbackFailed
		if out.retry {
			msg := fmt.Sprintf("gave up after %d attempts; the last: %s", c.Delivery.Attempts, out.err)
			res.Error = &msg
		}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	won, err := d.store.CallbackSettle(sctx, res)
	switch {
	case err != nil:
		// The claim lapses and the delivery is attempted again.
		log.Warn("record a callback attempt", "state", res.State, "error", err)
		return
	case !won:
		log.Info("callback attempt outlived its claim; its outcome is another attempt's to record", "state", res.State)
		return
	}
	switch res.State {
	case db.CallbackDelivered:
		d.count("delivered", 1)
		if m := d.cfg.Metrics; m != nil {
			m.CallbackLatency.Observe(d.cfg.Clock().Sub(c.Delivery.CreatedAt).Seconds())
		}
		log.Debug("callback delivered", "status", deref(out.code))
	case db.CallbackPending:
		d.count("retried", 1)
		log.Info("callback attempt failed; it will be retried", "error", out.err, "retry_at", res.RetryAt)
	default:
		d.count("failed", 1)
		log.Warn("callback delivery failed", "error", *res.Error)
	}
}

// outcome is what one attempt learned.
type outcome struct {
	code *int
	// err is empty for a delivery.
	err string
	// retry: another attempt may succeed; retryAfter is the target's
	// Retry-After, if it sent one.
	retry      bool
	retryAfter time.Duration
	// interrupted: the dispatcher stopped mid-attempt.
	interrupted bool
}

func failed(format string, args ...any) outcome { return outcome{err: fmt.Sprintf(format, args...)} }

func (d *Dispatcher) attempt(ctx context.Context, c db.ClaimedCallback) outcome {
	var spec Spec
	if err := json.Unmarshal(c.Run.Callback, &spec); err != nil {
		return failed("the run's callback is not readable: %v", err)
	}
	// The policy may have narrowed since the submit (a restart with another
	// allow-list): the current one decides.
	if err := d.cfg.Policy.checkURL(spec.URL); err != nil {
		return failed("%v", err)
	}
	headers := make(http.Header, len(spec.Headers)+6)
	for name, value := range spec.Headers {
		ref, isRef, err := envRef(value)
		if err != nil {
			return failed("callback.headers.%s: %v", name, err)
		}
		if isRef {
			v, ok := d.cfg.Env(ref)
			if !ok {
				return failed("callback.headers.%s: environment variable %s is not set on this server", name, ref)
			}
			value = v
		}
		headers.Set(name, value)
	}
	b, err := body(c.Delivery.DeliveryID, &c.Run, spec.ExtraFields)
	if err != nil {
		return failed("%v", err)
	}
	if len(b) > maxBodyBytes {
		return failed("the body is %d bytes, more than %d", len(b), maxBodyBytes)
	}
	headers.Set("Content-Type", "application/json")
	headers.Set("User-Agent", "faucet/"+d.cfg.Version)
	headers.Set("Faucet-Delivery-Id", c.Delivery.DeliveryID)
	headers.Set("Faucet-Delivery-Attempt", strconv.Itoa(c.Delivery.Attempts))
	headers.Set("Faucet-Event", "run."+string(c.Run.Status))
	if len(d.cfg.Secret) > 0 {
		headers.Set(SignatureHeader, Sign(d.cfg.Secret, b))
	}

	actx, cancel := context.WithTimeout(ctx, d.cfg.AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, spec.Method, spec.URL, bytes.NewReader(b))
	if err != nil {
		return failed("callback.url: %v", causeOf(err))
	}
	req.Header = headers
	resp, err := d.client.Do(req)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return outcome{err: "interrupted: the server stopped during the attempt", retry: true, interrupted: true}
		case isRefused(err):
			return failed("%v", causeOf(err))
		case actx.Err() != nil:
			return outcome{err: fmt.Sprintf("no answer within %s", d.cfg.AttemptTimeout), retry: true}
		}
		return outcome{err: clip(causeOf(err).Error()), retry: true}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxAnswerBytes))
	_ = resp.Body.Close()
	code := resp.StatusCode
	out := outcome{code: &code}
	switch {
	case code >= 200 && code < 300:
		return out
	case code >= 300 && code < 400:
		out.err = fmt.Sprintf("HTTP %d: redirects are not followed", code)
	case code == http.StatusRequestTimeout || code == http.StatusTooEarly || code == http.StatusTooManyRequests || code >= 500:
		out.err, out.retry = fmt.Sprintf("HTTP %d", code), true
		out.retryAfter = retryAfter(resp.Header.Get("Retry-After"), d.cfg.Clock())
	default:
		// The target refused the delivery; it would refuse it again.
		out.err = fmt.Sprintf("HTTP %d", code)
	}
	return out
}

// backoff is the delay after a failed attempt (counting from 1): the base
// doubled per attempt up to the cap, between half and all of it at random,
// so the retries of many deliveries to one target spread out; at least what
// the target asked for in Retry-After, within the cap.
func (d *Dispatcher) backoff(attempt int, asked time.Duration) time.Duration {
	delay := d.cfg.BackoffMax
	if attempt < 32 {
		delay = min(d.cfg.BackoffBase<<(attempt-1), d.cfg.BackoffMax)
	}
	delay = delay/2 + rand.N(delay/2+1)
	return max(delay, min(asked, d.cfg.BackoffMax))
}

// retryAfter reads a Retry-After value: seconds, or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.Atoi(v); err == nil && secs > 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}

// causeOf drops the url.Error wrapping of a client error: it quotes the
// whole URL, and a URL may carry a token.
func causeOf(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func clip(s string) string {
	if len(s) > maxErrorText {
		return truncate(s, maxErrorText) + "…"
	}
	return s
}

func (d *Dispatcher) count(result string, n int) {
	if m := d.cfg.Metrics; m != nil {
		m.CallbackDeliveries.WithLabelValues(result).Add(float64(n))
	}
}

func (d *Dispatcher) gauge() {
	if m := d.cfg.Metrics; m != nil {
		d.mu.Lock()
		n := d.inFlight
		d.mu.Unlock()
		m.CallbacksInFlight.Set(float64(n))
	}
}

func deref[T any](v *T) any {
	if v == nil {
		return nil
	}
	return *v
}
