//go:build faucet_cpuprofile

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"time"
)

// cpuProfileEnv names the directory a binary built with the
// faucet_cpuprofile tag writes its CPU profile into, from start to exit, as
// COMMAND-PID.pprof (serve-PID, connector-serve-generate-PID …). Plugin
// processes see it only when passed on (--plugin-env). The tag exists for
// the benchmarks (server/e2e, BENCH_CPUPROFILE); a release build has no such
// code.
const cpuProfileEnv = "FAUCET_DEBUG_CPUPROFILE"

// pluginWindow is how long a plugin process profiles: the SDK's Serve ends
// the process with os.Exit, so its profile is written after a fixed time
// rather than at exit.
const pluginWindow = 4 * time.Second

func init() {
	startProfile = func() func() {
		dir := os.Getenv(cpuProfileEnv)
		if dir == "" {
			return func() {}
		}
		command := "faucet"
		if len(os.Args) > 1 {
			command = strings.Join(os.Args[1:min(len(os.Args), 4)], "-")
		}
		name := fmt.Sprintf("%s-%d.pprof", strings.Map(func(r rune) rune {
			if r == '/' || r == os.PathSeparator {
				return '_'
			}
			return r
		}, command), os.Getpid())
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			fmt.Fprintln(os.Stderr, "faucet: cpu profile:", err)
			return func() {}
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, "faucet: cpu profile:", err)
			f.Close()
			return func() {}
		}
		var once sync.Once
		stop := func() {
			once.Do(func() {
				pprof.StopCPUProfile()
				f.Close()
			})
		}
		if len(os.Args) > 1 && os.Args[1] == "connector" {
			time.AfterFunc(pluginWindow, stop)
		}
		return stop
	}
}
