package sdk_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/faucet-dev/faucet/internal/testfs"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// confined returns file access confined to a fresh root, the root, and a
// directory outside it holding secret.txt.
func confined(t *testing.T, denied ...sdk.DeniedFile) (*sdk.Files, string, string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	root, outside := filepath.Join(base, "root"), filepath.Join(base, "outside")
	for _, d := range []string{root, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(outside, "secret.txt"), "secret")
	write(t, filepath.Join(root, "in.txt"), "inside")
	return sdk.NewFiles([]string{root}, denied), root, outside
}

func write(t *testing.T, name, text string) {
	t.Helper()
	if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func wantOutside(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, sdk.ErrOutsideRoots) {
		t.Fatalf("%s: got %v, want the path refused as outside the file roots", what, err)
	}
}

func TestFilesRelativeAndAbsolute(t *testing.T) {
	t.Parallel()
	f, root, _ := confined(t)
	for _, name := range []string{"in.txt", "./in.txt", filepath.Join(root, "in.txt"), "sub/../in.txt"} {
		file, err := f.Open(name)
		if err != nil {
			t.Fatalf("open %s: %v", name, err)
		}
		file.Close()
	}
	abs, err := f.Abs("out/x.jsonl")
	if err != nil || abs != filepath.Join(root, "out", "x.jsonl") {
		t.Fatalf("Abs = %q, %v; a relative path is taken in the first root", abs, err)
	}
}

func TestFilesRefusesEscapes(t *testing.T) {
	t.Parallel()
	f, root, outside := confined(t)
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "linkdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../outside/secret.txt", filepath.Join(root, "rel-link.txt")); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{
		"absolute path elsewhere":          filepath.Join(outside, "secret.txt"),
		"etc passwd":                       "/etc/passwd",
		"dot dot":                          "../outside/secret.txt",
		"dot dot inside absolute":          filepath.Join(root, "..", "outside", "secret.txt"),
		"symlink to a file outside":        "link.txt",
		"relative symlink climbing out":    "rel-link.txt",
		"symlinked directory":              "linkdir/secret.txt",
		"symlinked directory, absolute":    filepath.Join(root, "linkdir", "secret.txt"),
		"a root's sibling with its prefix": root + "-other/x",
	}
	for what, name := range cases {
		_, err := f.Open(name)
		wantOutside(t, what+" (open)", err)
		_, err = f.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		wantOutside(t, what+" (write)", err)
		_, err = f.Stat(name)
		wantOutside(t, what+" (stat)", err)
	}
	// Writing through a symlinked directory creates nothing outside.
	if _, err := f.OpenFile("linkdir/new.txt", os.O_WRONLY|os.O_CREATE, 0o644); err == nil {
		t.Fatal("created a file through a symlinked directory")
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a file appeared outside the root: %v", err)
	}
	wantOutside(t, "mkdir through a symlinked directory", f.MkdirAll("linkdir/sub", 0o755))
	wantOutside(t, "rename onto a symlinked directory", f.Rename(filepath.Join(root, "in.txt"), "linkdir/in.txt"))
	_, err := f.Glob("../outside/*")
	if err == nil {
		t.Fatal("a pattern climbing out of the root matched")
	}
	if _, _, err := f.Dir("linkdir/x.db"); !errors.Is(err, sdk.ErrOutsideRoots) {
		t.Fatalf("Dir through a symlinked directory: %v", err)
	}
	// Symlinks that stay inside the root are followed.
	if err := os.Symlink("in.txt", filepath.Join(root, "ok-link.txt")); err != nil {
		t.Fatal(err)
	}
	if file, err := f.Open("ok-link.txt"); err != nil {
		t.Fatalf("a symlink within the root: %v", err)
	} else {
		file.Close()
	}
}

// TestFilesRenameRace swaps a directory of the root for a symlink out of it
// and back while the same path is opened: no open ever reads the file
// outside, since each resolves beneath the root when it happens.
func TestFilesRenameRace(t *testing.T) {
	t.Parallel()
	f, root, outside := confined(t)
	dir := filepath.Join(root, "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "secret.txt"), "inside")
	stop := testfs.SwapDir(t, dir, outside)
	defer stop()
	opened := 0
	for range 2000 {
		file, err := f.Open("d/secret.txt")
		if err != nil {
			continue
		}
		b := make([]byte, 16)
		n, _ := file.Read(b)
		file.Close()
		opened++
		if string(b[:n]) != "inside" {
			t.Fatalf("read %q through a directory swapped for a symlink out of the root", b[:n])
		}
	}
	t.Logf("%d of 2000 opens found the directory in place", opened)
}

func TestFilesRefusesServerFiles(t *testing.T) {
	t.Parallel()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	token := filepath.Join(base, "history.db.token")
	write(t, token, "s3cret-token")
	fi, err := os.Stat(token)
	if err != nil {
		t.Fatal(err)
	}
	dev, ino, _ := sdk.FileID(fi)
	plugins := filepath.Join(base, "plugins")
	if err := os.Mkdir(plugins, 0o755); err != nil {
		t.Fatal(err)
	}
	denied := []sdk.DeniedFile{
		{Path: token, Device: dev, Inode: ino},
		{Path: filepath.Join(base, "history.db-wal")},
		{Path: plugins, Dir: true},
	}
	// The root holds the server's files: a root of "/" included.
	for i, root := range []string{base, "/"} {
		f := sdk.NewFiles([]string{root}, denied)
		for what, name := range map[string]string{
			"the token file":    token,
			"a hard link to it": hardLink(t, token, filepath.Join(base, fmt.Sprintf("innocent-%d.txt", i))),
		} {
			_, err := f.Open(name)
			if !errors.Is(err, sdk.ErrServerFile) {
				t.Fatalf("root %s, %s: got %v, want it refused as a server file", root, what, err)
			}
			if _, err := f.Stat(name); !errors.Is(err, sdk.ErrServerFile) {
				t.Fatalf("root %s, stat %s: got %v", root, what, err)
			}
		}
		if _, err := f.OpenFile(filepath.Join(base, "history.db-wal"), os.O_WRONLY|os.O_CREATE, 0o644); !errors.Is(err, sdk.ErrServerFile) {
			t.Fatalf("root %s: creating the history's WAL: %v", root, err)
		}
		if _, err := os.Stat(filepath.Join(base, "history.db-wal")); !errors.Is(err, os.ErrNotExist) {
			t.Fatal("the refused WAL file was created")
		}
		if _, err := f.OpenFile(filepath.Join(plugins, "faucet-evil"), os.O_WRONLY|os.O_CREATE, 0o755); !errors.Is(err, sdk.ErrServerFile) {
			t.Fatalf("root %s: creating a file in a plugin directory: %v", root, err)
		}
		tmp := filepath.Join(base, fmt.Sprintf("tmp-%d", i))
		write(t, tmp, "x")
		if err := f.Rename(tmp, token); !errors.Is(err, sdk.ErrServerFile) {
			t.Fatalf("root %s: replacing the token file: %v", root, err)
		}
		if err := f.Remove(token); !errors.Is(err, sdk.ErrServerFile) {
			t.Fatalf("root %s: removing the token file: %v", root, err)
		}
	}
	if b, _ := os.ReadFile(token); string(b) != "s3cret-token" {
		t.Fatalf("the token file changed: %q", b)
	}
}

func hardLink(t *testing.T, target, name string) string {
	t.Helper()
	if err := os.Link(target, name); err != nil {
		t.Fatal(err)
	}
	return name
}

func TestFilesRemoveOnlyRegularFiles(t *testing.T) {
	t.Parallel()
	f, root, outside := confined(t)
	if err := os.Mkdir(filepath.Join(root, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := f.Remove("empty"); err == nil {
		t.Fatal("removed a directory")
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := f.Remove("link"); err == nil {
		t.Fatal("removed a symlink")
	}
	if err := f.Remove("in.txt"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(outside, "secret.txt")); err != nil {
		t.Fatal(err)
	}
}

func TestFilesGlob(t *testing.T) {
	t.Parallel()
	f, root, _ := confined(t)
	write(t, filepath.Join(root, "b.txt"), "")
	got, err := f.Glob("*.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(root, "b.txt"), filepath.Join(root, "in.txt")}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("Glob = %v, want %v", got, want)
	}
}

func TestFilesUnconfined(t *testing.T) {
	t.Parallel()
	f := sdk.FilesFrom(t.Context())
	if f.Confined() {
		t.Fatal("a context without file access is confined")
	}
	file, err := f.Open("/etc/passwd")
	if err != nil && !errors.Is(err, syscall.ENOENT) {
		t.Fatalf("unconfined open: %v", err)
	}
	if file != nil {
		file.Close()
	}
}
