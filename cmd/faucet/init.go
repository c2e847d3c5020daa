package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/faucet-dev/faucet/pipeline"
	"github.com/faucet-dev/faucet/pipeline/scaffold"
	"github.com/faucet-dev/faucet/plugins/host"
)

// Connectors faucet init starts from when not told otherwise: a pair that
// runs as written.
const (
	initSource = "generate"
	initSink   = "jsonl"
	initName   = "my-pipeline"
)

func newInitCmd() *cobra.Command {
	var (
		pf                 pluginFlags
		source, sink, name string
		force, interactive bool
	)
	cmd := &cobra.Command{
		Use:   "init [FILE]",
		Short: "Write a starter pipeline config (default pipeline.yaml) from flags or by asking",
		Long: `Init writes a starter pipeline config for a source and a sink connector
(default generate → jsonl, which runs as written). Each connector's required
fields are filled in where the connector suggests a value, and left empty
otherwise; a secret field refers to an environment variable instead of
holding the secret; the optional fields follow, commented out, with their
defaults. faucet validate then lists what is left to fill in.

With --interactive, or when standard input is a terminal and neither
--source nor --sink is given, init asks for the name, the connectors and the
required fields. FILE - writes to standard output.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file := "pipeline.yaml"
			if len(args) == 1 {
				file = args[0]
			}
			if file != "-" && !force {
				if _, err := os.Stat(file); err == nil {
					return fmt.Errorf("%s exists; pass --force to replace it", file)
				}
			}
			h, _, err := pf.open(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer h.Close()
			ask := interactive || (!cmd.Flags().Changed("source") && !cmd.Flags().Changed("sink") && isTerminal(os.Stdin))
			s := starter{name: name, source: source, sink: sink, answers: map[string]string{}}
			if ask {
				p := &prompter{in: bufio.NewReader(cmd.InOrStdin()), out: cmd.ErrOrStderr()}
				if err := s.ask(p, h); err != nil {
					return err
				}
			}
			if err := s.check(h); err != nil {
				return err
			}
			text := s.render(h)
			if file == "-" {
				_, err := io.WriteString(cmd.OutOrStdout(), text)
				return err
			}
			if err := writeNew(file, text, force); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%s → %s)\n", file, s.source, s.sink)
			if _, err := pipeline.LoadFile(file, pipeline.LoadOptions{Catalog: h}); err != nil {
				fmt.Fprintf(cmd.OutOrStdout(), "before it runs, fill in what faucet validate %s reports:\n", file)
				for _, p := range pipeline.ConfigProblems(err) {
					fmt.Fprintln(cmd.OutOrStdout(), "  "+p.Error())
				}
				return nil
			}
			fmt.Fprintf(cmd.OutOrStdout(), "run it with: faucet run %s\n", file)
			return nil
		},
	}
	pf.register(cmd)
	cmd.Flags().StringVar(&source, "source", initSource, "the source connector")
	cmd.Flags().StringVar(&sink, "sink", initSink, "the sink connector")
	cmd.Flags().StringVar(&name, "name", initName, "the pipeline's name")
	cmd.Flags().BoolVarP(&interactive, "interactive", "i", false, "ask for the name, the connectors and their required fields")
	cmd.Flags().BoolVar(&force, "force", false, "replace FILE if it exists")
	for _, f := range []struct {
		flag string
		role pipeline.Role
	}{{"source", pipeline.RoleSource}, {"sink", pipeline.RoleSink}} {
		_ = cmd.RegisterFlagCompletionFunc(f.flag, func(cmd *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
			h, _, err := pf.open(cmd.Context(), io.Discard)
			if err != nil {
				return nil, cobra.ShellCompDirectiveError
			}
			defer h.Close()
			var out []string
			for _, n := range h.ConnectorNames(f.role) {
				if strings.HasPrefix(n, prefix) {
					out = append(out, n)
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		})
	}
	return cmd
}

// writeNew writes a file the umask decides the mode of, refusing to replace
// one unless force.
func writeNew(file, text string, force bool) error {
	flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if !force {
		flags |= os.O_EXCL
	}
	f, err := os.OpenFile(file, flags, 0o666)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%s exists; pass --force to replace it", file)
	}
	if err != nil {
		return err
	}
	if _, err := io.WriteString(f, text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// starter is the config faucet init writes.
type starter struct {
	name, source, sink string
	// answers are the values asked for, by "role.field".
	answers map[string]string
}

// check refuses connectors the catalog lacks in their role.
func (s *starter) check(h *host.Host) error {
	for _, side := range []struct {
		role pipeline.Role
		name string
	}{{pipeline.RoleSource, s.source}, {pipeline.RoleSink, s.sink}} {
		if _, ok := h.ConnectorSchema(side.role, side.name); !ok {
			return usageErrorf("--%s %q: not a %s connector here (%s connectors: %s)", side.role, side.name, side.role, side.role, strings.Join(h.ConnectorNames(side.role), ", "))
		}
	}
	return nil
}

// prompter asks questions on a terminal, or reads the answers from any
// input, one a line; the end of the input takes every default.
type prompter struct {
	in  *bufio.Reader
	out io.Writer
}

func (p *prompter) ask(question, def string) string {
	if def != "" {
		fmt.Fprintf(p.out, "%s [%s]: ", question, def)
	} else {
		fmt.Fprintf(p.out, "%s: ", question)
	}
	line, err := p.in.ReadString('\n')
	if err != nil && line == "" {
		fmt.Fprintln(p.out)
	}
	if line = strings.TrimSpace(line); line != "" {
		return line
	}
	return def
}

// ask fills in the starter from the answers, asking again for a connector
// that does not exist.
func (s *starter) ask(p *prompter, h *host.Host) error {
	s.name = p.ask("pipeline name", s.name)
	for _, side := range []struct {
		role pipeline.Role
		into *string
	}{{pipeline.RoleSource, &s.source}, {pipeline.RoleSink, &s.sink}} {
		names := h.ConnectorNames(side.role)
		for tries := 0; ; tries++ {
			answer := p.ask(fmt.Sprintf("%s connector (%s)", side.role, strings.Join(names, ", ")), *side.into)
			if slices.Contains(names, answer) {
				*side.into = answer
				break
			}
			if tries == 2 {
				return usageErrorf("no %s connector %q (%s connectors: %s)", side.role, answer, side.role, strings.Join(names, ", "))
			}
			fmt.Fprintf(p.out, "no %s connector %q\n", side.role, answer)
		}
	}
	for _, side := range []struct {
		role pipeline.Role
		name string
	}{{pipeline.RoleSource, s.source}, {pipeline.RoleSink, s.sink}} {
		schema, _ := h.ConnectorSchema(side.role, side.name)
		for _, f := range scaffold.Fields(schema) {
			if !f.Required && !f.First {
				continue
			}
			def := ""
			if v, ok := f.Suggestion(side.name); ok {
				def = fmt.Sprint(v)
			}
			if f.Description != "" {
				fmt.Fprintf(p.out, "  %s\n", f.Description)
			}
			if answer := p.ask(fmt.Sprintf("%s %s", side.role, f.Name), def); answer != "" {
				s.answers[string(side.role)+"."+f.Name] = answer
			}
		}
	}
	return nil
}

// initComment heads the config faucet init writes.
const initComment = "A starter pipeline written by faucet init: check it with faucet validate,\n" +
	"run it with faucet run. Connector fields: faucet connectors spec NAME."

// render writes the config as commented YAML.
func (s *starter) render(h *host.Host) string {
	src, _ := h.ConnectorSchema(pipeline.RoleSource, s.source)
	sink, _ := h.ConnectorSchema(pipeline.RoleSink, s.sink)
	return scaffold.Starter{
		Comment: initComment, Name: s.name, Answers: s.answers,
		Source: scaffold.Side{Connector: s.source, Schema: src},
		Sink:   scaffold.Side{Connector: s.sink, Schema: sink},
	}.Render()
}
