package host_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/internal/testwait"
	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/plugins/host"
)

// helperEnv makes the test binary act as a faucet process that starts a
// plugin, reads from it, and waits to be killed.
const helperEnv = "FAUCET_HOST_TEST_HELPER_BIN"

func runHelper(bin string) {
	h, err := host.New(context.Background(), host.Options{Executable: bin, Builtins: builtinSpecs()})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	src, err := h.OpenSource(context.Background(), pipeline.ConnectorConfig{Type: "generate", Config: []byte(`{"count": 1000000000}`)}, nil)
	if err == nil {
		_, err = src.Recv()
	}
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("ready")
	select {}
}

// statFields returns the fields of a /proc stat file after the parenthesised
// command (state, ppid, …; field n of proc(5) is at index n-3), or nil when
// the process or thread is gone.
func statFields(path string) []string {
	stat, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
}

// procState returns a process's state letter and parent pid from
// /proc/PID/stat, or ok false when it is gone.
func procState(pid int) (state string, ppid int, ok bool) {
	fields := statFields(fmt.Sprintf("/proc/%d/stat", pid))
	if len(fields) < 2 {
		return "", 0, false
	}
	ppid, _ = strconv.Atoi(fields[1])
	return fields[0], ppid, true
}

// alive reports whether pid runs (a zombie has finished).
func alive(pid int) bool {
	state, _, ok := procState(pid)
	return ok && state != "Z"
}

// liveChildren lists the live processes whose parent is ppid.
func liveChildren(ppid int) []int {
	var pids []int
	matches, _ := filepath.Glob("/proc/[0-9]*")
	for _, m := range matches {
		pid, err := strconv.Atoi(filepath.Base(m))
		if err != nil {
			continue
		}
		if state, p, ok := procState(pid); ok && state != "Z" && p == ppid {
			pids = append(pids, pid)
		}
	}
	return pids
}

func TestNoOrphansWhenFaucetIsKilled(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+faucetBin)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper said %q", line)
	}
	plugins := liveChildren(cmd.Process.Pid)
	if len(plugins) == 0 {
		t.Fatal("the helper has no plugin process")
	}
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	for _, pid := range plugins {
		err := testwait.Wait(30*time.Second, func() error {
			if alive(pid) {
				return fmt.Errorf("plugin %d outlived its killed faucet process", pid)
			}
			return nil
		})
		if err != nil {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatal(err)
		}
	}
}
