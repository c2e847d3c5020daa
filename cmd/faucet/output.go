package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"
)

// outputFormat is the value of --output: text for people, json for scripts.
type outputFormat string

const (
	outputText outputFormat = "text"
	outputJSON outputFormat = "json"
)

func (f *outputFormat) String() string { return string(*f) }
func (f *outputFormat) Type() string   { return "text|json" }

// Set checks the value here, so that a wrong one is a usage error before
// anything runs.
func (f *outputFormat) Set(s string) error {
	switch outputFormat(s) {
	case outputText, outputJSON:
		*f = outputFormat(s)
		return nil
	}
	return fmt.Errorf("want text or json, not %q", s)
}

// jsonFlag is --json, the shorthand of --output json.
type jsonFlag struct{ f *outputFormat }

func (j jsonFlag) String() string   { return strconv.FormatBool(*j.f == outputJSON) }
func (j jsonFlag) Type() string     { return "bool" }
func (j jsonFlag) IsBoolFlag() bool { return true }

func (j jsonFlag) Set(s string) error {
	on, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	if on {
		*j.f = outputJSON
	} else {
		*j.f = outputText
	}
	return nil
}

// addOutputFlags registers --output (-o) and --json on cmd and returns the
// chosen format.
func addOutputFlags(cmd *cobra.Command) *outputFormat {
	f := outputText
	cmd.Flags().VarP(&f, "output", "o", "output format: text or json")
	cmd.Flags().Var(jsonFlag{&f}, "json", "print JSON (same as --output json)")
	cmd.Flags().Lookup("json").NoOptDefVal = "true"
	return &f
}

// printJSON writes v as indented JSON, without escaping <, > and &, which
// appear in connector descriptions and queries.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
