package sdk_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/faucet-dev/faucet/internal/testfs"
	"github.com/faucet-dev/faucet/plugins/sdk"
)

// replace writes text to name through a Folder as the file sinks do: a
// temporary file beside it, renamed over it.
func replace(f *sdk.Files, name, text string) error {
	d, err := f.Folder(name, true)
	if err != nil {
		return err
	}
	defer d.Close()
	tmp := "." + d.Base() + ".tmp"
	file, err := d.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = file.WriteString(text)
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = d.Rename(tmp, d.Base())
	}
	if err != nil {
		return errors.Join(err, d.Remove(tmp))
	}
	return nil
}

func TestFolderReplacesWithinTheRoot(t *testing.T) {
	t.Parallel()
	f, root, outside := confined(t)
	if err := replace(f, "new/sub/out.txt", "one"); err != nil {
		t.Fatalf("a file in missing directories: %v", err)
	}
	if err := replace(f, filepath.Join(root, "new", "sub", "out.txt"), "two"); err != nil {
		t.Fatalf("replacing it by its absolute path: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "new", "sub", "out.txt")); err != nil || string(b) != "two" {
		t.Fatalf("the file holds %q, %v", b, err)
	}
	entries, _ := os.ReadDir(filepath.Join(root, "new", "sub"))
	if len(entries) != 1 {
		t.Fatalf("left behind: %v", entries)
	}
	if err := os.Symlink(outside, filepath.Join(root, "linkdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(root, "link.txt")); err != nil {
		t.Fatal(err)
	}
	wantOutside(t, "a folder through a symlinked directory", replace(f, "linkdir/x.txt", "x"))
	wantOutside(t, "a folder climbing out", replace(f, "../outside/x.txt", "x"))
	d, err := f.Folder("link.txt", false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	_, err = d.Stat("link.txt")
	wantOutside(t, "stat of a symlink out of the root", err)
	_, err = d.OpenFile("link.txt", os.O_WRONLY|os.O_TRUNC, 0)
	wantOutside(t, "open of a symlink out of the root", err)
	if _, err := d.OpenFile("sub/x.txt", os.O_WRONLY|os.O_CREATE, 0o644); err == nil {
		t.Fatal("a Folder opened a path of more than one element")
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(b) != "secret" {
		t.Fatalf("the file outside changed: %q", b)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Fatalf("files appeared outside the root: %v", entries)
	}
}

// TestFolderIsPinned: a directory renamed away and swapped for a symlink
// out of the root after its Folder opened still takes the file, and
// nothing lands outside.
func TestFolderIsPinned(t *testing.T) {
	t.Parallel()
	f, root, outside := confined(t)
	dir := filepath.Join(root, "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	d, err := f.Folder(filepath.Join(dir, "out.txt"), false)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := os.Rename(dir, dir+"-moved"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, dir); err != nil {
		t.Fatal(err)
	}
	file, err := d.OpenFile(".tmp", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	file.Close()
	if err := d.Rename(".tmp", "out.txt"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir+"-moved", "out.txt")); err != nil {
		t.Fatalf("the file is not in the directory the Folder opened: %v", err)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Fatalf("files appeared outside the root: %v", entries)
	}
}

// TestFolderRace replaces a file through a directory swapped for a symlink
// out of the root and back: each replacement lands inside or is refused.
func TestFolderRace(t *testing.T) {
	t.Parallel()
	f, root, outside := confined(t)
	dir := filepath.Join(root, "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	stop := testfs.SwapDir(t, dir, outside)
	defer stop()
	for range 500 {
		_ = replace(f, "d/out.txt", "x")
	}
	stop()
	if entries, _ := os.ReadDir(outside); len(entries) != 1 {
		t.Fatalf("files appeared outside the root: %v", entries)
	}
}

func TestFolderRefusesServerFiles(t *testing.T) {
	t.Parallel()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	token := filepath.Join(base, "data", "history.db.token")
	if err := os.Mkdir(filepath.Dir(token), 0o755); err != nil {
		t.Fatal(err)
	}
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
	later := filepath.Join(base, "later", "history.db")
	denied := []sdk.DeniedFile{
		{Path: token, Device: dev, Inode: ino},
		{Path: filepath.Join(base, "data", "history.db-wal")},
		{Path: plugins, Dir: true},
	}
	link := hardLink(t, token, filepath.Join(base, "innocent.txt"))
	for what, c := range map[string]struct {
		denied []sdk.DeniedFile
		// later: a denied file's directory does not exist when the
		// Files is first used.
		later bool
	}{
		"every directory known": {denied: denied},
		"a directory missing":   {denied: append(denied, sdk.DeniedFile{Path: later}), later: true},
	} {
		f := sdk.NewFiles([]string{base}, c.denied)
		// A directory that holds none of them is used first.
		if err := replace(f, filepath.Join(base, "out", "ok.txt"), "ok"); err != nil {
			t.Fatalf("%s: a file beside none of the server's: %v", what, err)
		}
		for name, wantErr := range map[string]bool{
			token: true,
			filepath.Join(base, "data", "history.db-wal"): true,
			filepath.Join(plugins, "faucet-evil"):         true,
			link:                                          true,
			filepath.Join(base, "data", "other.txt"):      false,
		} {
			err := replace(f, name, "x")
			if wantErr != errors.Is(err, sdk.ErrServerFile) {
				t.Errorf("%s: replacing %s: %v", what, name, err)
			}
		}
		if c.later {
			if err := os.Mkdir(filepath.Dir(later), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := replace(f, later, "x"); !errors.Is(err, sdk.ErrServerFile) {
				t.Errorf("%s: creating a server file in a directory made since: %v", what, err)
			}
		}
		if err := os.Remove(filepath.Join(base, "data", "other.txt")); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(token); string(b) != "s3cret-token" {
		t.Fatalf("the token file changed: %q", b)
	}
	for _, p := range []string{filepath.Join(base, "data", "history.db-wal"), filepath.Join(plugins, "faucet-evil"), later} {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was created", p)
		}
	}
}
