package triggers

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/faucet-dev/faucet/db"
	_ "github.com/faucet-dev/faucet/db/postgres"
	_ "github.com/faucet-dev/faucet/db/sqlite"
	"github.com/faucet-dev/faucet/internal/testpg"
)

// histories are the shared histories the cluster tests run on: a SQLite
// file the members open each, and a Postgres database.
var histories = []struct {
	name string
	url  func(t *testing.T) string
}{
	{"sqlite", func(t *testing.T) string { return "sqlite:" + filepath.Join(t.TempDir(), "history.db") }},
	{"postgres", func(t *testing.T) string { return testpg.Database(t) }},
}

// clock is the members' shared clock, which the test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// member is one server of a cluster: its own connection to the shared
// history, a Service over it whose runs are written as admission writes a
// cluster's (pending, with the fire in the run's transaction), and the
// events it started runs for.
type member struct {
	store db.Store
	svc   *Service
	mu    sync.Mutex
	won   []string
}

func newMember(t *testing.T, url string, c *clock) *member {
	t.Helper()
	// The store keeps the members' clock: it dates the trigger's arming,
	// which a schedule's slots are judged against.
	st, err := db.Open(t.Context(), url, db.Options{InstanceID: uuid.NewString(), Clock: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m := &member{store: st}
	m.svc = New(Config{Store: st, Now: c.Now, Submitter: SubmitFunc(func(ctx context.Context, r Run) (Accepted, error) {
		rec := &db.RunRecord{
			RunID: uuid.Must(uuid.NewV7()).String(), Name: r.Name, Labels: r.Labels, Status: db.StatusPending,
			SubmittedAt: time.Now().UTC().Truncate(time.Microsecond), Invocations: []db.InvocationRecord{},
			Clock: r.Clock, ConfigBody: &r.Config,
		}
		if err := st.RunSubmitFired(ctx, rec, nil, *r.Fire); err != nil {
			return Accepted{}, err
		}
		m.mu.Lock()
		m.won = append(m.won, r.Fire.Key)
		m.mu.Unlock()
		return Accepted{RunID: rec.RunID, Status: rec.Status, SubmittedAt: rec.SubmittedAt}, nil
	})})
	return m
}

// watch returns a watcher of the set's trigger name on m, started now.
func (m *member) watch(t *testing.T, set *Set, name string) *watcher {
	t.Helper()
	tr := set.Lookup(name)
	if tr == nil {
		t.Fatalf("no trigger %s", name)
	}
	m.svc.resetState(set)
	return newWatcher(m.svc, tr)
}

// stepAll steps every watcher at once at now, as members whose timers fire
// together do, and fails the test when a step failed.
func stepAll(t *testing.T, ws []*watcher, now time.Time) {
	t.Helper()
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, w := range ws {
		wg.Go(func() {
			<-start
			w.step(context.Background(), now)
		})
	}
	close(start)
	wg.Wait()
	for _, w := range ws {
		if w.failures > 0 {
			h := w.s.Health()
			t.Fatalf("a member's step failed: %+v", h)
		}
	}
}

// wins merges the members' won events, failing on an event won twice.
func wins(t *testing.T, ms []*member) map[string]int {
	t.Helper()
	out := map[string]int{}
	for i, m := range ms {
		m.mu.Lock()
		for _, k := range m.won {
			if _, dup := out[k]; dup {
				t.Errorf("event %s started a run on two members (the second: member %d)", k, i)
			}
			out[k] = i
		}
		m.mu.Unlock()
	}
	return out
}

func loadSet(t *testing.T, files map[string]string) *Set {
	t.Helper()
	dir := writeFiles(t, files)
	set, err := Load(filepath.Join(dir, "triggers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// TestScheduleFiresEachSlotOnceAcrossMembers races three members of a
// cluster for every slot of a per-minute schedule: each slot starts one
// run. One member then dies; the others go on, and no slot is lost. Then
// the whole cluster is down for ten slots, and a member started afresh
// catches up the newest of them only.
func TestScheduleFiresEachSlotOnceAcrossMembers(t *testing.T) {
	for _, h := range histories {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			url := h.url(t)
			set := loadSet(t, map[string]string{"p.yaml": pipelineYAML, "triggers.yaml": "version: 1\ntriggers:\n" +
				"  - {name: every-minute, type: schedule, config: p.yaml, cron: \"* * * * *\", timezone: Europe/Berlin}\n"})
			// The members start watching now; the schedule's slots follow
			// on a clock the test moves a minute a step.
			start := time.Now().Truncate(time.Minute).Add(30 * time.Second)
			c := &clock{now: start}
			ms := []*member{newMember(t, url, c), newMember(t, url, c), newMember(t, url, c)}
			ws := make([]*watcher, len(ms))
			for i, m := range ms {
				ws[i] = m.watch(t, set, "every-minute")
			}
			// Their first look arms the trigger, now, and fires nothing.
			stepAll(t, ws, start)
			var want []time.Time
			for step := 1; step <= 12; step++ {
				now := start.Add(time.Duration(step) * time.Minute)
				c.set(now)
				if step == 7 {
					// Member 0 dies: it takes no step again.
					ws = ws[1:]
				}
				stepAll(t, ws, now)
				want = append(want, now.Truncate(time.Minute))
			}

			// The cluster is down for ten slots; a member starts afresh.
			last := start.Add(12 * time.Minute)
			back := last.Add(10 * time.Minute)
			c.set(back)
			fresh := newMember(t, url, c)
			ms = append(ms, fresh)
			fw := fresh.watch(t, set, "every-minute")
			stepAll(t, []*watcher{fw}, back)
			// The newest missed slot only: back is 30s past it.
			want = append(want, back.Truncate(time.Minute))
			// A second look at the same instant fires nothing more.
			stepAll(t, []*watcher{fw}, back)

			got := wins(t, ms)
			for _, slot := range want {
				if _, ok := got[slot.UTC().Format(time.RFC3339)]; !ok {
					t.Errorf("slot %s started no run", slot.UTC().Format(time.RFC3339))
				}
			}
			if len(got) != len(want) {
				t.Errorf("%d slots started runs, want %d: %v", len(got), len(want), got)
			}
			winners := map[int]bool{}
			for _, i := range got {
				winners[i] = true
			}
			t.Logf("%s: %d slots, won by %d distinct members", h.name, len(got), len(winners))
			// The history agrees: every wanted slot has its fire row.
			keys := make([]string, len(want))
			for i, slot := range want {
				keys[i] = slot.UTC().Format(time.RFC3339)
			}
			fired, err := fresh.store.TriggerFired(t.Context(), "every-minute", keys)
			if err != nil || len(fired) != len(keys) {
				t.Fatalf("fire rows of %d of %d slots (%v)", len(fired), len(keys), err)
			}
		})
	}
}

// TestObjectArrivalFiresEachFileOnceAcrossMembers lists one directory from
// three members while files land in it: each file starts one run, a file
// rewritten in place is a new version that starts one more, and a member
// started afresh (a restart) fires none of them again.
func TestObjectArrivalFiresEachFileOnceAcrossMembers(t *testing.T) {
	for _, h := range histories {
		t.Run(h.name, func(t *testing.T) {
			t.Parallel()
			url := h.url(t)
			set := loadSet(t, map[string]string{"p.yaml": pipelineYAML, "in/.keep": "", "triggers.yaml": "version: 1\ntriggers:\n" +
				"  - {name: drops, type: object_arrival, config: p.yaml, store: {type: file, path: in, glob: \"*.csv\"}, start_at: beginning}\n"})
			dir := set.Lookup("drops").dir
			c := &clock{now: time.Now()}
			ms := []*member{newMember(t, url, c), newMember(t, url, c), newMember(t, url, c)}
			ws := make([]*watcher, len(ms))
			for i, m := range ms {
				ws[i] = m.watch(t, set, "drops")
			}
			write := func(name, body string, mtime time.Time) {
				p := filepath.Join(dir, name)
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Chtimes(p, mtime, mtime); err != nil {
					t.Fatal(err)
				}
			}
			base := time.Now().Truncate(time.Second)
			var files []string
			for round := range 6 {
				for i := range 3 {
					name := fmt.Sprintf("f%d-%d.csv", round, i)
					write(name, "a\n1\n", base.Add(time.Duration(round)*time.Second))
					files = append(files, name)
				}
				if round == 3 {
					// Member 0 dies mid-way.
					ws = ws[1:]
				}
				// A file fires once two listings agree on it.
				stepAll(t, ws, c.Now())
				stepAll(t, ws, c.Now())
			}
			// Not a matching file, and a hidden one being written.
			write("notes.txt", "x", base)
			write(".f9.csv.tmp", "x", base)
			// A new version of a file fired already.
			write("f0-0.csv", "a\n1\n2\n", base.Add(time.Minute))
			stepAll(t, ws, c.Now())
			stepAll(t, ws, c.Now())

			fresh := newMember(t, url, c)
			ms = append(ms, fresh)
			fw := fresh.watch(t, set, "drops")
			stepAll(t, []*watcher{fw}, c.Now())
			stepAll(t, []*watcher{fw}, c.Now())
			if len(fresh.won) != 0 {
				t.Errorf("a restarted member fired %d files again", len(fresh.won))
			}

			got := wins(t, ms)
			if want := len(files) + 1; len(got) != want {
				t.Errorf("%d file versions started runs, want %d", len(got), want)
			}
			listed, err := list(dir, "*.csv")
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range listed {
				if _, ok := got[f.key()]; !ok {
					t.Errorf("%s started no run", f.rel)
				}
			}
		})
	}
}
