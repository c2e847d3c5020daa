package sqlite_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/pressly/goose/v3"

	"github.com/faucet-dev/faucet/db"
)

// unwritableDir is a directory in which this process cannot create a file.
// Root ignores permission bits, so as root it is a directory of Linux's sysfs,
// which refuses new files to everyone.
func unwritableDir(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		dir := t.TempDir()
		if err := os.Chmod(dir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
		return dir
	}
	if runtime.GOOS != "linux" {
		t.Fatalf("running as root on %s: no directory is known to refuse root's writes", runtime.GOOS)
	}
	return "/sys"
}

func TestOpenRejectsUnusablePaths(t *testing.T) {
	dir := t.TempDir()
	notDB := filepath.Join(dir, "notes.txt")
	notes := bytes.Repeat([]byte("these are notes, not a SQLite database\n"), 20)
	if err := os.WriteFile(notDB, notes, 0o644); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path, want string
	}{
		{"missing directory", filepath.Join(dir, "missing", "history.db"), "does not exist"},
		{"parent is a file", filepath.Join(plain, "history.db"), "is not a directory"},
		{"path is a directory", dir, "is a directory"},
		{"not a database", notDB, "not a SQLite database"},
		{"unwritable directory", filepath.Join(unwritableDir(t), "history.db"), "writable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := db.Open(t.Context(), "sqlite:"+c.path, db.Options{})
			if err == nil {
				t.Fatalf("Open(%s) succeeded", c.path)
			}
			if !strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not name %s and say %q", err, c.path, c.want)
			}
			if got := db.TransienceOf(err); got != db.Permanent {
				t.Errorf("verdict %v, want permanent", got)
			}
		})
	}

	// Nothing was created or changed on the way to those errors.
	if _, err := os.Stat(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the missing directory exists now: %v", err)
	}
	if got, err := os.ReadFile(notDB); err != nil || !bytes.Equal(got, notes) {
		t.Errorf("the non-database file changed (err %v)", err)
	}
}

// A database file this process may only read is refused at Open, by name.
// Root may write any file, so as root the opener is a child process running
// as nobody.
func TestOpenRejectsAReadOnlyFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "history.db")
	s, err := db.Open(t.Context(), "sqlite:"+path, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o444); err != nil {
		t.Fatal(err)
	}

	var verdict, msg string
	if os.Geteuid() != 0 {
		_, err := db.Open(t.Context(), "sqlite:"+path, db.Options{})
		if err == nil {
			t.Fatal("Open of a read-only file succeeded")
		}
		verdict, msg = db.TransienceOf(err).String(), err.Error()
	} else {
		if runtime.GOOS != "linux" {
			t.Fatalf("running as root on %s: cannot drop to an unprivileged user", runtime.GOOS)
		}
		// The child needs to reach its binary and the file as nobody.
		bin := filepath.Join(dir, "sqlite.test")
		exe, err := os.ReadFile(os.Args[0])
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, exe, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{filepath.Dir(dir), dir} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		cmd := exec.CommandContext(t.Context(), bin, "-test.run=^$")
		cmd.Env = append(os.Environ(), openerURLEnv+"=sqlite:"+path)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("opener as nobody: %v\n%s", err, out)
		}
		verdict, msg, _ = strings.Cut(strings.TrimSpace(string(out)), "\n")
	}
	if verdict != db.Permanent.String() || !strings.Contains(msg, path) || !strings.Contains(msg, "permission denied") {
		t.Fatalf("Open of a read-only file: %s error %q; want a permanent error naming %s and the denial", verdict, msg, path)
	}
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, before) {
		t.Errorf("the read-only file changed (err %v)", err)
	}
}

func TestMemoryStoresArePrivate(t *testing.T) {
	a, err := db.Open(t.Context(), "memory", db.Options{InstanceID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := db.Open(t.Context(), "memory", db.Options{InstanceID: "b"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	rec := &db.RunRecord{RunID: "r1", Status: db.StatusPending, SubmittedAt: time.Now()}
	if err := a.RunSubmit(t.Context(), rec, nil); err != nil {
		t.Fatal(err)
	}
	// The writer and the read pool share a's database...
	if _, err := a.RunGet(t.Context(), "r1"); err != nil {
		t.Fatalf("read back through the read pool: %v", err)
	}
	claimed, err := a.RunClaimPending(t.Context(), 5)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %v, %v", claimed, err)
	}
	// ...which b does not see.
	if _, err := b.RunGet(t.Context(), "r1"); !errors.Is(err, db.ErrNotFound) {
		t.Fatalf("another in-memory store sees a's run: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

// A goose provider that cannot be built is a permanent failure: retrying
// the same options cannot help.
func TestMigratorRejectsConflictingOptions(t *testing.T) {
	d, err := db.LookupDialect("sqlite")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "history.db")
	_, _, err = d.Migrator(t.Context(), path, goose.WithTableName("other_versions"))
	if err == nil {
		t.Fatal("Migrator accepted a table name next to its own version store")
	}
	if got := db.TransienceOf(err); got != db.Permanent || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %q (%v): want a permanent error naming %s", err, got, path)
	}
}
