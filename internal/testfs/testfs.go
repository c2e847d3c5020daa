// Package testfs stages the file-system races the file-roots tests need,
// so every test of the confinement races the same way.
package testfs

import (
	"os"
	"sync"
	"testing"
)

// SwapDir swaps the directory dir for a symlink to target and back, as fast
// as it can, until the returned stop is called (dir is then either).
// Opens of a path through dir meanwhile find the
// directory, the symlink, or nothing, so a check of the path made before
// the open proves nothing about the open.
func SwapDir(t testing.TB, dir, target string) (stop func()) {
	t.Helper()
	link, aside := dir+"-link", dir+"-aside"
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var swapper sync.WaitGroup
	swapper.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			// dir is the real directory on even turns, the symlink on odd ones.
			if i%2 == 0 {
				_ = os.Rename(dir, aside)
				_ = os.Rename(link, dir)
			} else {
				_ = os.Rename(dir, link)
				_ = os.Rename(aside, dir)
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			swapper.Wait()
		})
	}
}
