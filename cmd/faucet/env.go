package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// envName is the environment variable of a flag: --max-concurrent-runs is
// FAUCET_MAX_CONCURRENT_RUNS.
func envName(flag string) string {
	return "FAUCET_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// lookupEnv reads a FAUCET_* variable. A variable set to the empty string
// counts as unset: `FAUCET_NO_AUTH=` in a unit file or an env list must not
// switch anything on, least of all turn authentication off.
func lookupEnv(name string) (string, bool) {
	v, ok := os.LookupEnv(name)
	return v, ok && v != ""
}

// flagsFromEnv sets the flags named in names (every flag when names is
// empty) that were not given on the command line from their FAUCET_*
// variables. A value that does not parse is an error naming the variable;
// only booleans and numbers are echoed in it, since a string value may be a
// token. FAUCET_PLUGIN_DIR is left to the plugin host, which reads it as a
// PATH-style list after the --plugin-dir flags; FAUCET_FILE_ROOT is a
// PATH-style list too, since a directory's name may hold a comma or a space.
func flagsFromEnv(fs *pflag.FlagSet, names ...string) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		if err != nil || f.Changed || f.Name == "plugin-dir" {
			return
		}
		if len(names) > 0 && !slices.Contains(names, f.Name) {
			return
		}
		name := envName(f.Name)
		v, ok := lookupEnv(name)
		if !ok {
			return
		}
		switch f.Value.Type() {
		case "bool":
			b, perr := strconv.ParseBool(v)
			if perr != nil {
				err = usageErrorf("%s=%q is not a boolean: use true or false (or 1 or 0), or leave it empty for the default", name, v)
				return
			}
			v = strconv.FormatBool(b)
		case "stringSlice":
			v = strings.Join(strings.Fields(strings.ReplaceAll(v, ",", " ")), ",")
		case "stringArray":
			items := strings.Fields(strings.ReplaceAll(v, ",", " "))
			if f.Name == "file-root" {
				items = filepath.SplitList(v)
			}
			for _, item := range items {
				if item != "" && err == nil {
					if setErr := fs.Set(f.Name, item); setErr != nil {
						err = usageErrorf("%s: not a valid value for --%s", name, f.Name)
					}
				}
			}
			return
		}
		if setErr := fs.Set(f.Name, v); setErr != nil {
			switch f.Value.Type() {
			case "int", "int64", "float64":
				err = usageErrorf("%s=%q is not a number (--%s)", name, v, f.Name)
			default:
				err = usageErrorf("%s: not a valid value for --%s", name, f.Name)
			}
		}
	})
	return err
}

// fromEnvUsage is the help text of a flag whose default comes from the
// environment. It names the variable and never shows its value: the help of
// --token must not print the token.
func fromEnvUsage(usage, flag string) string {
	return fmt.Sprintf("%s (from %s when not given)", usage, envName(flag))
}
