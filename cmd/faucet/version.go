package main

import (
	"cmp"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is stamped at release build time with -ldflags "-X main.version=…";
// otherwise it comes from the module's build information.
var version = ""

// buildVersion is faucet's version and the VCS revision it was built from,
// as far as the binary knows them: a go install of a tagged module has its
// version, a build in a clone its commit, and anything it cannot tell is
// "unknown" rather than a guess.
func buildVersion() (ver, revision string, modified bool) {
	ver, revision = version, "unknown"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return cmp.Or(ver, "unknown"), revision, false
	}
	if ver == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		ver = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	return cmp.Or(ver, "unknown"), revision, modified
}

// versionLine is what faucet --version and faucet version print.
func versionLine() string {
	ver, rev, modified := buildVersion()
	if modified {
		rev += "+modified"
	}
	return fmt.Sprintf("faucet %s (revision %s, %s, %s/%s)", ver, rev, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print faucet's version and the revision it was built from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionLine())
			return err
		},
	}
}
