package callbacks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"time"
)

// Resolver finds a target's addresses; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// refusedError is a delivery the policy stopped at connect: the target's
// name resolved to an address a callback may not reach (DNS rebinding, or a
// name that points inside).
type refusedError struct {
	host string
	addr netip.Addr
	why  string
}

func (e *refusedError) Error() string {
	return fmt.Sprintf("%s resolves to %s, %s, which the server refuses to call", e.host, e.addr, e.why)
}

// guardedClient is the HTTP client of deliveries. It resolves the target
// itself and connects only to an address the policy allows, the address it
// checked (so a second resolution cannot swap it), through no proxy, and
// never follows a redirect (which could point anywhere).
func guardedClient(p Policy, resolver Resolver, connectTimeout time.Duration) *http.Client {
	dialer := &net.Dialer{Timeout: connectTimeout}
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		trusted := p.allowed(host)
		var addrs []netip.Addr
		if a, err := netip.ParseAddr(host); err == nil {
			addrs = []netip.Addr{a}
		} else if addrs, err = resolver.LookupNetIP(ctx, "ip", host); err != nil {
			return nil, err
		}
		var refused, last error
		for _, a := range addrs {
			if why := refusedAddr(a); why != "" && !trusted {
				refused = &refusedError{host: host, addr: a, why: why}
				continue
			}
			conn, err := dialer.DialContext(ctx, network, net.JoinHostPort(a.Unmap().String(), port))
			if err == nil {
				return conn, nil
			}
			last = err
		}
		if last != nil {
			return nil, last
		}
		if refused != nil {
			return nil, refused
		}
		return nil, fmt.Errorf("%s has no address", host)
	}
	return &http.Client{
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         dial,
			ForceAttemptHTTP2:   true,
			MaxIdleConnsPerHost: 4,
			IdleConnTimeout:     30 * time.Second,
			TLSHandshakeTimeout: connectTimeout,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// isRefused reports whether err is the policy's refusal at connect.
func isRefused(err error) bool {
	var r *refusedError
	return errors.As(err, &r)
}
