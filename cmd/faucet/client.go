package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/faucet-dev/faucet/openapi/client"
	"github.com/faucet-dev/faucet/server"
)

// defaultServer is where the client commands look for faucet serve: where
// it listens with no flags.
const defaultServer = "http://" + server.DefaultListen

// serverFlags are the connection flags of the commands that talk to a
// faucet serve.
type serverFlags struct {
	server string
	token  string
}

// register adds --server and --token to cmd, persistent when its
// subcommands share them.
func (sf *serverFlags) register(cmd *cobra.Command, persistent bool) {
	fs := cmd.Flags()
	if persistent {
		fs = cmd.PersistentFlags()
	}
	fs.StringVar(&sf.server, "server", defaultServer, "the faucet serve to talk to: a URL, or host:port for plain http (FAUCET_SERVER when not given)")
	fs.StringVar(&sf.token, "token", "", fromEnvUsage("bearer token", "token"))
}

// connect reads the flags' environment variables and returns an API client.
func (sf *serverFlags) connect(cmd *cobra.Command) (*client.ClientWithResponses, error) {
	if err := flagsFromEnv(cmd.Flags(), "server", "token"); err != nil {
		return nil, err
	}
	base, err := serverURL(sf.server)
	if err != nil {
		return nil, err
	}
	sf.server = base
	hc := &http.Client{Transport: refusedHint{base: base, next: http.DefaultTransport}}
	return client.NewClientWithResponses(base, client.WithHTTPClient(hc), client.WithRequestEditorFn(sf.authorize))
}

// serverURL accepts what people type for --server: a full URL, or a bare
// host:port, which means plain http (the scheme faucet serve speaks).
func serverURL(s string) (string, error) {
	raw := strings.TrimRight(strings.TrimSpace(s), "/")
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", usageErrorf("--server %q: want host:port or an http(s):// URL, such as %s", s, defaultServer)
	}
	return raw, nil
}

func (sf *serverFlags) authorize(_ context.Context, req *http.Request) error {
	if sf.token != "" {
		req.Header.Set("Authorization", "Bearer "+sf.token)
	}
	return nil
}

// refusedHint explains a refused connection: nothing listens there, which
// for a first-time user usually means faucet serve is not running yet.
type refusedHint struct {
	base string
	next http.RoundTripper
}

func (h refusedHint) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := h.next.RoundTrip(req)
	if err != nil && errors.Is(err, syscall.ECONNREFUSED) {
		return nil, fmt.Errorf("no faucet serve is listening at %s (connection refused): start one with faucet serve, or point --server (FAUCET_SERVER) at yours", h.base)
	}
	return resp, err
}

// apiError turns a non-success response into an error carrying the
// server's problem detail, with a hint where the fix is usually elsewhere.
func (sf *serverFlags) apiError(resp *http.Response, body []byte) error {
	var msg string
	var p client.Problem
	if json.Unmarshal(body, &p) == nil && p.Error.Code != "" {
		msg = fmt.Sprintf("%d %s: %s", resp.StatusCode, p.Error.Code, p.Error.Message)
		if p.Error.Details != nil {
			if d, err := json.MarshalIndent(p.Error.Details, "", "  "); err == nil {
				msg += "\n" + string(d)
			}
		}
		if ra := resp.Header.Get("Retry-After"); ra != "" {
			msg += " (retry after " + ra + "s)"
		}
	} else {
		msg = fmt.Sprintf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	if resp.StatusCode == http.StatusUnauthorized {
		msg += "\n" + sf.unauthorizedHint()
	}
	return errors.New(msg)
}

// unauthorizedHint says where a token comes from. The token itself is never
// part of it.
func (sf *serverFlags) unauthorizedHint() string {
	file := server.AdminTokenFile(server.DefaultDataDir())
	if sf.token == "" {
		return fmt.Sprintf("no token was sent: pass --token or set FAUCET_TOKEN; a faucet serve with the default data directory created its admin token in %s", file)
	}
	return fmt.Sprintf("the server did not accept the token given by --token or FAUCET_TOKEN; a faucet serve with the default data directory keeps its admin token in %s", file)
}
