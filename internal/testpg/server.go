// Package testpg starts throwaway PostgreSQL servers for faucet's tests and
// benchmarks: initdb into a temporary directory, a free loopback port, and a
// socket directory the server's user can write. Tests reach the shared server
// through TEST_DATABASE_URL and get a database of their own from Database.
package testpg

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Server is a PostgreSQL server running from a temporary data directory.
type Server struct {
	bin     string
	dir     string
	port    int
	runAs   string // system user the server runs as; empty for the current user
	logPath string
}

// BinDir finds the newest PostgreSQL server binaries: $FAUCET_PG_BIN, then
// Debian's /usr/lib/postgresql/<version>/bin, then initdb on PATH.
func BinDir() (string, error) {
	if d := os.Getenv("FAUCET_PG_BIN"); d != "" {
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return pgVersion(dirs[i]) < pgVersion(dirs[j]) })
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "initdb")); err == nil {
			return dirs[i], nil
		}
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		return filepath.Dir(p), nil
	}
	return "", errors.New("no PostgreSQL server binaries found (looked at $FAUCET_PG_BIN, /usr/lib/postgresql/*/bin and PATH); install the postgresql package")
}

func pgVersion(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

// Start initialises and starts a server. PostgreSQL refuses to run as root, so
// under root the server runs as the "postgres" system user.
func Start(ctx context.Context) (*Server, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "faucet-pg-")
	if err != nil {
		return nil, fmt.Errorf("create postgres temp dir: %w", err)
	}
	s := &Server{bin: bin, dir: dir, logPath: filepath.Join(dir, "server.log")}
	if os.Geteuid() == 0 {
		s.runAs = "postgres"
		if err := chownTo(dir, s.runAs); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	if err := s.run(ctx, "initdb", "-D", s.dataDir(), "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale=C"); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("initdb: %w", err)
	}
	var lastErr error
	for range 5 {
		if s.port, err = freePort(); err != nil {
			lastErr = err
			continue
		}
		if lastErr = s.start(ctx); lastErr == nil {
			return s, nil
		}
	}
	os.RemoveAll(dir)
	return nil, fmt.Errorf("start postgres: %w", lastErr)
}

// URL is the connection URL of the server's "postgres" database.
func (s *Server) URL() string { return s.DatabaseURL("postgres") }

// DatabaseURL is the connection URL of one database on the server.
func (s *Server) DatabaseURL(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, name)
}

// Port is the TCP port the server listens on.
func (s *Server) Port() int { return s.port }

// Stop shuts the server down immediately (no checkpoint: it is a throwaway
// server), keeping its data directory so Restart can bring it back.
func (s *Server) Stop(ctx context.Context) error {
	return s.run(ctx, "pg_ctl", "-D", s.dataDir(), "-m", "immediate", "-w", "stop")
}

// Resume starts a stopped server again on the same port.
func (s *Server) Resume(ctx context.Context) error { return s.start(ctx) }

// Restart stops the server and starts it again on the same port.
func (s *Server) Restart(ctx context.Context) error {
	if err := s.Stop(ctx); err != nil {
		return err
	}
	return s.start(ctx)
}

// Close stops the server and removes its directory.
func (s *Server) Close() error {
	err := s.Stop(context.Background())
	if rmErr := os.RemoveAll(s.dir); err == nil {
		err = rmErr
	}
	return err
}

func (s *Server) dataDir() string { return filepath.Join(s.dir, "data") }

func (s *Server) start(ctx context.Context) error {
	// fsync and synchronous_commit are off: nothing here must survive a power
	// loss, and tests run several times faster without them.
	opts := strings.Join([]string{
		"-c listen_addresses=127.0.0.1",
		"-p " + strconv.Itoa(s.port),
		"-k " + s.dir,
		"-c fsync=off",
		"-c synchronous_commit=off",
		"-c full_page_writes=off",
		"-c max_connections=500",
	}, " ")
	if err := s.run(ctx, "pg_ctl", "-D", s.dataDir(), "-o", opts, "-l", s.logPath, "-w", "-t", "60", "start"); err != nil {
		log, _ := os.ReadFile(s.logPath)
		return fmt.Errorf("%w\n%s", err, tail(string(log), 2000))
	}
	return nil
}

func (s *Server) run(ctx context.Context, name string, args ...string) error {
	path := filepath.Join(s.bin, name)
	var cmd *exec.Cmd
	if s.runAs != "" {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", s.runAs, "--", path}, args...)...)
	} else {
		cmd = exec.CommandContext(ctx, path, args...)
	}
	cmd.Dir = s.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %w: %s", name, err, tail(string(out), 2000))
	}
	return nil
}

func chownTo(dir, name string) error {
	u, err := user.Lookup(name)
	if err != nil {
		return fmt.Errorf("postgres refuses to run as root and there is no %q user to run it as: %w", name, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return fmt.Errorf("chown postgres temp dir: %w", err)
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
