package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/pressly/goose/v3"
	"github.com/spf13/cobra"

	"github.com/faucet-dev/faucet/db"
	"github.com/faucet-dev/faucet/pipeline/snapshot"
)

// errPlanChanged is plan --diff's failure when the config differs from what
// last ran: exit status 1, and the diff says how.
var errPlanChanged = errors.New("the config differs from the one its pipeline last ran")

func newPlanCmd() *cobra.Command {
	var (
		pf      pluginFlags
		sf      serverFlags
		hf      historyFlags
		sets    []string
		name    string
		diff    bool
		history string
		out     *outputFormat
	)
	cmd := &cobra.Command{
		Use:   "plan FILE",
		Short: "Show what a pipeline config resolves to, or with --diff what would change against its last run",
		Long: `Plan loads a pipeline config as faucet run does (its matrix expanded, ${env:…}
and ${vars.…} resolved, every connector config validated) and prints what it
resolves to: its settings, and each row's connectors and their configs, with
every secret replaced by <secret>. Nothing is read or written.

With --diff it compares that with the snapshot faucet serve recorded of the
pipeline's last run (a pipeline is its runs' name, which defaults to the
config's name:, or --name) and prints what would change: rows added or
removed, and each setting or config field added, removed or changed. A
changed secret shows as such, never its value. The snapshot comes from the
server (--server, --token, as for faucet runs), or straight from its history
database with --history. The exit status is 0 when nothing would change and
1 when something would (or there is no snapshot yet).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			h, _, err := pf.open(cmd.Context(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			defer h.Close()
			plan, notes, err := loadPlan(args[0], sets, h)
			if err != nil {
				return configProblems(cmd.ErrOrStderr(), args[0], err)
			}
			for _, n := range notes {
				fmt.Fprintln(cmd.ErrOrStderr(), n)
			}
			if name == "" {
				name = plan.Name
			}
			if !diff {
				doc := snapshot.Of(plan, name, "")
				if *out == outputJSON {
					return printJSON(cmd.OutOrStdout(), doc)
				}
				return doc.Render(cmd.OutOrStdout())
			}
			if name == "" {
				return usageErrorf("%s has no name: the snapshot to compare with is its pipeline's; pass --name", displayName(args[0]))
			}
			var last *recordedSnapshot
			if cmd.Flags().Changed("history") {
				hf.url = history
				last, err = snapshotFromHistory(cmd, &hf, name)
			} else {
				last, err = snapshotFromServer(cmd, &sf, name)
			}
			if err != nil {
				return err
			}
			against := "nothing: no run of pipeline " + name + " has recorded a snapshot yet"
			var prev *snapshot.Doc
			salt := snapshot.NewSalt()
			if last != nil {
				prev, salt = &last.doc, last.doc.Salt
				against = fmt.Sprintf("the config run %s executed at %s", last.runID, last.at.Format(time.RFC3339))
			}
			d := snapshot.Compare(prev, snapshot.Of(plan, name, salt))
			if *out == outputJSON {
				if err := printJSON(cmd.OutOrStdout(), d); err != nil {
					return err
				}
			} else if err := d.Render(cmd.OutOrStdout(), against); err != nil {
				return err
			}
			if !d.Equal {
				return errPlanChanged
			}
			return nil
		},
	}
	pf.register(cmd)
	sf.register(cmd, false)
	out = addOutputFlags(cmd)
	cmd.Flags().StringArrayVar(&sets, "set", nil, setUsage)
	cmd.Flags().StringVar(&name, "name", "", "the pipeline's name, when its runs are submitted under another than the config's")
	cmd.Flags().BoolVar(&diff, "diff", false, "compare with the config the pipeline's last run executed")
	cmd.Flags().StringVar(&history, "history", "", "read the snapshot from this run-history database (sqlite:PATH or postgres://…) instead of a server")
	cmd.MarkFlagsMutuallyExclusive("history", "server")
	return cmd
}

// recordedSnapshot is the last snapshot of a pipeline, wherever it was read.
type recordedSnapshot struct {
	doc   snapshot.Doc
	runID string
	at    time.Time
}

// snapshotFromServer reads the pipeline's last snapshot from faucet serve;
// nil when it has none.
func snapshotFromServer(cmd *cobra.Command, sf *serverFlags, name string) (*recordedSnapshot, error) {
	c, err := sf.connect(cmd)
	if err != nil {
		return nil, err
	}
	resp, err := c.GetConfigSnapshotWithResponse(cmd.Context(), name)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode() == http.StatusNotFound {
		return nil, nil
	}
	if resp.JSON200 == nil {
		return nil, sf.apiError(resp.HTTPResponse, resp.Body)
	}
	raw, err := json.Marshal(resp.JSON200.Snapshot)
	if err != nil {
		return nil, err
	}
	return parseSnapshot(raw, resp.JSON200.RunId, resp.JSON200.RecordedAt)
}

// snapshotFromHistory reads the pipeline's last snapshot from a history
// database, which it does not migrate: a read has no business changing a
// schema, so a history that is behind this faucet is refused instead.
func snapshotFromHistory(cmd *cobra.Command, hf *historyFlags, name string) (*recordedSnapshot, error) {
	err := hf.withMigrator(cmd, false, func(p *goose.Provider) error {
		if err := db.CheckSchemaVersion(cmd.Context(), p); err != nil {
			return err
		}
		pending, err := p.HasPending(cmd.Context())
		if err != nil {
			return fmt.Errorf("read the schema version of %s: %w", hf.display(), err)
		}
		if pending {
			return fmt.Errorf("the history at %s has an older schema than this faucet reads; faucet migrate up --history … brings it up (faucet serve does on start)", hf.display())
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
	defer cancel()
	store, err := db.Open(ctx, hf.url, db.Options{})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", hf.display(), err)
	}
	defer store.Close()
	snaps, err := store.ConfigSnapshotGet(ctx, name)
	if errors.Is(err, db.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseSnapshot(snaps.Latest.Body, snaps.Latest.RunID, snaps.Latest.RecordedAt)
}

func parseSnapshot(raw []byte, runID string, at time.Time) (*recordedSnapshot, error) {
	doc, err := snapshot.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("decode the snapshot of run %s: %w", runID, err)
	}
	return &recordedSnapshot{doc: doc, runID: runID, at: at}, nil
}
