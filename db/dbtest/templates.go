package dbtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/faucet-dev/faucet/db"
)

// templateBody is a config document whose bytes a store must keep exactly:
// an unresolved reference, unicode, tabs, trailing blanks, no final newline.
const templateBody = "version: 1\nname: Tenant Sync\t# ünïcode ✓\nparams:\n  tenant: {required: true}\npipeline:\n  source: {type: generate, config: {url: \"${env:API_URL}/${param.tenant}\"}}   \n  sink: {type: jsonl, config: {path: out.jsonl}}"

func draft(id string) db.TemplateDraft {
	return db.TemplateDraft{
		ID: id, Name: ptr("Tenant Sync"), Description: ptr("syncs one tenant"), Format: db.TemplateFormatYAML,
		Body: templateBody, Params: json.RawMessage(`{"tenant": {"type": "string", "required": true}}`),
		CreatedBy: ptr("alice"),
	}
}

func register(t testing.TB, s db.Store, d db.TemplateDraft) db.TemplateVersion {
	t.Helper()
	v, err := s.TemplateRegister(t.Context(), d)
	if err != nil {
		t.Fatalf("register %s: %v", d.ID, err)
	}
	return v
}

// registerN registers n versions of id.
func registerN(t testing.TB, s db.Store, id string, n int) {
	t.Helper()
	for range n {
		register(t, s, draft(id))
	}
}

func state(t testing.TB, s db.Store, id string) db.TemplateState {
	t.Helper()
	st, err := s.TemplateState(t.Context(), id)
	if err != nil {
		t.Fatalf("state of %s: %v", id, err)
	}
	return st
}

func launch(t testing.TB, s db.Store, id string, version int) db.LaunchOutcome {
	t.Helper()
	out, err := s.TemplateLaunch(t.Context(), id, version, ptr("bob"))
	if err != nil {
		t.Fatalf("launch %s v%d: %v", id, version, err)
	}
	return out
}

// wantPointers fails t unless st's derived pointers are stable, previous and
// newest (0: none).
func wantPointers(t testing.TB, st db.TemplateState, stable, previous, newest int) {
	t.Helper()
	got := func(p *int) int {
		if p == nil {
			return 0
		}
		return *p
	}
	if got(st.Stable) != stable || got(st.Previous) != previous || got(st.Newest) != newest {
		t.Fatalf("stable %d, previous %d, newest %d; want %d, %d, %d (launches %+v)",
			got(st.Stable), got(st.Previous), got(st.Newest), stable, previous, newest, st.Launches)
	}
}

func wantVersions(t testing.TB, st db.TemplateState, want ...int) {
	t.Helper()
	if !slices.Equal(st.Versions, want) {
		t.Fatalf("versions %v, want %v", st.Versions, want)
	}
}

func wantTemplateNotFound(t testing.TB, what string, err error) {
	t.Helper()
	if !errors.Is(err, db.ErrNotFound) || db.TransienceOf(err) != db.Permanent {
		t.Fatalf("%s: %v (%v), want a permanent ErrNotFound", what, err, db.TransienceOf(err))
	}
}

func wantDeprecated(t testing.TB, what string, err error, version *int, reason string) {
	t.Helper()
	var dep *db.DeprecatedError
	if !errors.As(err, &dep) || !errors.Is(err, db.ErrTemplateDeprecated) || db.TransienceOf(err) != db.Permanent {
		t.Fatalf("%s: %v, want a permanent DeprecatedError", what, err)
	}
	if !reflect.DeepEqual(dep.Version, version) || dep.Deprecation.Reason == nil || *dep.Deprecation.Reason != reason {
		t.Fatalf("%s: deprecation %+v of version %v, want reason %q of version %v", what, dep.Deprecation, dep.Version, reason, version)
	}
}

func exerciseTemplates(t *testing.T, newURL func(t testing.TB) string) {
	t.Run("RegisterKeepsTheBodyVerbatim", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		s := open(t, url, db.Options{InstanceID: "a"})
		d := draft("tenant-sync")
		v1 := register(t, s, d)
		if v1.Version != 1 || v1.ID != "tenant-sync" || v1.CreatedAt.Location() != time.UTC || !v1.CreatedAt.Equal(v1.CreatedAt.Truncate(time.Microsecond)) {
			t.Fatalf("first version %+v", v1)
		}
		for _, format := range []string{db.TemplateFormatJSON, db.TemplateFormatYAML} {
			d.Format = format
			register(t, s, d)
		}
		// Another store reads what this one wrote.
		detail, err := open(t, url, db.Options{InstanceID: "b"}).TemplateGet(t.Context(), "tenant-sync", 2)
		if err != nil {
			t.Fatal(err)
		}
		got := detail.Version
		if got.Body != templateBody || got.Format != db.TemplateFormatJSON || *got.Name != "Tenant Sync" || *got.Description != "syncs one tenant" || *got.CreatedBy != "alice" {
			t.Fatalf("version 2 read back as %+v", got)
		}
		sameJSON(t, "params", d.Params, got.Params)
		wantVersions(t, detail.State, 3, 2, 1)
		wantPointers(t, detail.State, 0, 0, 3)
		if st := detail.State.Status(); st != db.TemplateStatusDraft {
			t.Fatalf("status %s, want draft: a register launches nothing", st)
		}
	})

	t.Run("DescriptionCarriesForward", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		register(t, s, draft("t"))
		bare := draft("t")
		bare.Description = nil
		if v := register(t, s, bare); v.Description == nil || *v.Description != "syncs one tenant" {
			t.Fatalf("a register without a description has %v, want the previous one", v.Description)
		}
		changed := draft("t")
		changed.Description = ptr("now something else")
		register(t, s, changed)
		if v := register(t, s, bare); v.Description == nil || *v.Description != "now something else" {
			t.Fatalf("description %v, want the newest one", v.Description)
		}
	})

	t.Run("ConcurrentRegistersNumberEveryVersionOnce", func(t *testing.T) {
		t.Parallel()
		// Two stores (two connection pools, as two processes would have)
		// register one template 50 times at once.
		url := newURL(t)
		ss := stores(t, url, "a", "b")
		got := concurrently(t, 50, func(i int) (int, error) {
			v, err := ss[i%2].TemplateRegister(t.Context(), draft("busy"))
			return v.Version, err
		})
		slices.Sort(got)
		want := make([]int, 50)
		for i := range want {
			want[i] = i + 1
		}
		if !slices.Equal(got, want) {
			t.Fatalf("versions assigned %v, want 1..50 once each", got)
		}
		// Pruned to the newest ones, which nothing protects.
		var newest []int
		for v := 50; v > 50-db.TemplateVersionRetain; v-- {
			newest = append(newest, v)
		}
		wantVersions(t, state(t, ss[0], "busy"), newest...)
	})

	t.Run("ConcurrentLaunchesNumberEveryEntryOnce", func(t *testing.T) {
		t.Parallel()
		url := newURL(t)
		ss := stores(t, url, "a", "b")
		registerN(t, ss[0], "t", 3)
		outs := concurrently(t, 30, func(i int) (db.LaunchOutcome, error) {
			return ss[i%2].TemplateLaunch(t.Context(), "t", 1+i%3, nil)
		})
		written := 0
		for _, o := range outs {
			if !o.AlreadyLaunched {
				written++
			}
		}
		st := state(t, ss[0], "t")
		if len(st.Launches) != written {
			t.Fatalf("%d launch-log entries, want the %d launches that changed the live version", len(st.Launches), written)
		}
		for i, l := range st.Launches {
			if l.Seq != written-i {
				t.Fatalf("launch log seqs %+v, want %d down to 1 without gaps", st.Launches, written)
			}
			if i > 0 && l.Version == st.Launches[i-1].Version {
				t.Fatalf("launch log %+v has a re-launch of the live version", st.Launches)
			}
		}
	})

	t.Run("PruneKeepsWhatIsPointedAt", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		registerN(t, s, "t", 3)
		launch(t, s, "t", 1)
		launch(t, s, "t", 2) // stable 2, previous 1
		if err := s.TemplateTag(t.Context(), "t", "prod", 3, ptr("carol")); err != nil {
			t.Fatal(err)
		}
		registerN(t, s, "t", db.TemplateVersionRetain+3) // versions 4 … 26
		st := state(t, s, "t")
		var want []int
		for v := 26; v > 26-db.TemplateVersionRetain; v-- {
			want = append(want, v)
		}
		wantVersions(t, st, append(want, 3, 2, 1)...)
		wantPointers(t, st, 2, 1, 26)
		if st.Tags["prod"] != 3 {
			t.Fatalf("tags %v, want prod at 3", st.Tags)
		}
	})

	t.Run("LaunchAndRelaunch", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		registerN(t, s, "t", 2)
		first := launch(t, s, "t", 1)
		if first.Version != 1 || first.Replaced != nil || first.AlreadyLaunched || first.Status != db.TemplateStatusLaunched {
			t.Fatalf("first launch %+v", first)
		}
		again := launch(t, s, "t", 1)
		if !again.AlreadyLaunched || again.Replaced != nil || again.Version != 1 || again.Status != db.TemplateStatusLaunched {
			t.Fatalf("re-launch of the live version %+v, want a no-op", again)
		}
		if st := state(t, s, "t"); len(st.Launches) != 1 {
			t.Fatalf("a re-launch wrote to the log: %+v", st.Launches)
		}
		second := launch(t, s, "t", 2)
		if second.Version != 2 || second.Replaced == nil || *second.Replaced != 1 {
			t.Fatalf("second launch %+v, want 2 replacing 1", second)
		}
		st := state(t, s, "t")
		wantPointers(t, st, 2, 1, 2)
		if l := st.Launches[0]; l.Seq != 2 || l.Version != 2 || l.LaunchedBy == nil || *l.LaunchedBy != "bob" || l.LaunchedAt.Location() != time.UTC {
			t.Fatalf("newest launch %+v", l)
		}
		_, err := s.TemplateLaunch(t.Context(), "t", 9, nil)
		wantTemplateNotFound(t, "launch of a missing version", err)
		_, err = s.TemplateLaunch(t.Context(), "missing", 1, nil)
		wantTemplateNotFound(t, "launch of a missing template", err)
		if st := state(t, s, "t"); len(st.Launches) != 2 {
			t.Fatalf("a refused launch wrote to the log: %+v", st.Launches)
		}
	})

	t.Run("RegisterAndLaunch", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		d := draft("t")
		d.Launch, d.Tags = true, []string{"dev", "canary"}
		register(t, s, d)
		register(t, s, d)
		st := state(t, s, "t")
		wantPointers(t, st, 2, 1, 2)
		if !reflect.DeepEqual(st.Tags, map[string]int{"dev": 2, "canary": 2}) {
			t.Fatalf("tags %v, want dev and canary at 2", st.Tags)
		}
		if by := st.Launches[0].LaunchedBy; by == nil || *by != "alice" {
			t.Fatalf("launched by %v, want the registering principal", by)
		}
	})

	t.Run("Rollback", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		registerN(t, s, "t", 3)
		_, err := s.TemplateRollback(t.Context(), "t", nil)
		if !errors.Is(err, db.ErrNoRollbackTarget) || db.TransienceOf(err) != db.Permanent {
			t.Fatalf("rollback of a draft: %v, want ErrNoRollbackTarget", err)
		}
		launch(t, s, "t", 1)
		if _, err := s.TemplateRollback(t.Context(), "t", nil); !errors.Is(err, db.ErrNoRollbackTarget) {
			t.Fatalf("rollback after one launch: %v, want ErrNoRollbackTarget", err)
		}
		launch(t, s, "t", 3)
		back, err := s.TemplateRollback(t.Context(), "t", ptr("oncall"))
		if err != nil || back.Version != 1 || back.Replaced == nil || *back.Replaced != 3 {
			t.Fatalf("rollback %+v, %v; want 1 replacing 3", back, err)
		}
		st := state(t, s, "t")
		wantPointers(t, st, 1, 3, 3)
		if by := st.Launches[0].LaunchedBy; len(st.Launches) != 3 || by == nil || *by != "oncall" {
			t.Fatalf("launch log %+v, want the rollback as a third launch by oncall", st.Launches)
		}
		// Rolling back again returns to the version just rolled off.
		if again, err := s.TemplateRollback(t.Context(), "t", nil); err != nil || again.Version != 3 {
			t.Fatalf("second rollback %+v, %v; want 3", again, err)
		}
	})

	t.Run("PreviousIsTheNewestOtherVersion", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		registerN(t, s, "t", 2)
		launch(t, s, "t", 1)
		launch(t, s, "t", 2)
		launch(t, s, "t", 1)
		// Deleting 2 leaves two launches of 1 side by side: 1 is live and
		// nothing is left to roll back to.
		if err := s.TemplateDelete(t.Context(), "t", ptr(2)); err != nil {
			t.Fatal(err)
		}
		st := state(t, s, "t")
		wantPointers(t, st, 1, 0, 1)
		if len(st.Launches) != 2 {
			t.Fatalf("launch log %+v, want the two launches of 1", st.Launches)
		}
		if _, err := s.TemplateRollback(t.Context(), "t", nil); !errors.Is(err, db.ErrNoRollbackTarget) {
			t.Fatalf("rollback: %v, want ErrNoRollbackTarget", err)
		}
	})

	t.Run("LaunchLogIsBounded", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		registerN(t, s, "t", 2)
		n := db.TemplateLaunchRetain + 5
		for i := range n {
			launch(t, s, "t", 1+i%2)
		}
		st := state(t, s, "t")
		if len(st.Launches) != db.TemplateLaunchRetain || st.Launches[0].Seq != n || st.Launches[len(st.Launches)-1].Seq != n-db.TemplateLaunchRetain+1 {
			t.Fatalf("%d launch-log entries from seq %d to %d, want the newest %d of %d",
				len(st.Launches), st.Launches[0].Seq, st.Launches[len(st.Launches)-1].Seq, db.TemplateLaunchRetain, n)
		}
		wantPointers(t, st, 1+(n-1)%2, 1+n%2, 2)
	})

	t.Run("Tags", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		registerN(t, s, "t", 2)
		for _, v := range []int{1, 2} {
			if err := s.TemplateTag(t.Context(), "t", "pre-prod", v, ptr("carol")); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.TemplateTag(t.Context(), "t", "dev", 1, nil); err != nil {
			t.Fatal(err)
		}
		st := state(t, s, "t")
		if !reflect.DeepEqual(st.Tags, map[string]int{"pre-prod": 2, "dev": 1}) || st.Stable != nil {
			t.Fatalf("tags %v (stable %v), want pre-prod moved to 2, dev at 1, nothing launched", st.Tags, st.Stable)
		}
		for _, tag := range []string{"latest", "stable", "previous", "newest", "prd", "PROD", ""} {
			wantPermanent(t, "tag "+tag, s.TemplateTag(t.Context(), "t", tag, 1, nil), "template tag")
		}
		wantTemplateNotFound(t, "tag of a missing version", s.TemplateTag(t.Context(), "t", "prod", 9, nil))
		wantTemplateNotFound(t, "tag of a missing template", s.TemplateTag(t.Context(), "missing", "prod", 1, nil))
		if got := state(t, s, "t").Tags; !reflect.DeepEqual(got, st.Tags) {
			t.Fatalf("refused tags changed the channels: %v", got)
		}
	})

	t.Run("DeleteAVersionWithWhatPointsAtIt", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		registerN(t, s, "t", 3)
		launch(t, s, "t", 1)
		launch(t, s, "t", 2)
		for _, tag := range []string{"prod", "dev"} {
			if err := s.TemplateTag(t.Context(), "t", tag, 2, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.TemplateTag(t.Context(), "t", "canary", 3, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.TemplateDeprecate(t.Context(), "t", ptr(2), &db.TemplateDeprecation{Reason: ptr("broken")}); err != nil {
			t.Fatal(err)
		}
		if err := s.TemplateDelete(t.Context(), "t", ptr(2)); err != nil {
			t.Fatal(err)
		}
		st := state(t, s, "t")
		wantVersions(t, st, 3, 1)
		wantPointers(t, st, 1, 0, 3)
		if !reflect.DeepEqual(st.Tags, map[string]int{"canary": 3}) || len(st.VersionDeprecations) != 0 || len(st.Launches) != 1 {
			t.Fatalf("after deleting 2: tags %v, deprecations %v, launches %+v", st.Tags, st.VersionDeprecations, st.Launches)
		}
		if _, err := s.TemplateGet(t.Context(), "t", 2); !errors.Is(err, db.ErrNotFound) {
			t.Fatalf("get of the deleted version: %v", err)
		}
		wantTemplateNotFound(t, "delete of a missing version", s.TemplateDelete(t.Context(), "t", ptr(2)))
		// Numbers are not reused while the template exists.
		if v := register(t, s, draft("t")); v.Version != 4 {
			t.Fatalf("next version %d, want 4", v.Version)
		}
	})

	t.Run("DeleteATemplate", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		registerN(t, s, "t", 2)
		registerN(t, s, "other", 1)
		launch(t, s, "t", 1)
		if err := s.TemplateTag(t.Context(), "t", "prod", 2, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.TemplateDeprecate(t.Context(), "t", nil, &db.TemplateDeprecation{}); err != nil {
			t.Fatal(err)
		}
		if err := s.TemplateDelete(t.Context(), "t", nil); err != nil {
			t.Fatal(err)
		}
		_, err := s.TemplateState(t.Context(), "t")
		wantTemplateNotFound(t, "state of a deleted template", err)
		wantTemplateNotFound(t, "second delete", s.TemplateDelete(t.Context(), "t", nil))
		// Nothing of it is left: registered again, it starts afresh.
		if v := register(t, s, draft("t")); v.Version != 1 {
			t.Fatalf("re-registered as version %d, want 1", v.Version)
		}
		st := state(t, s, "t")
		if st.Deprecation != nil || len(st.Tags) != 0 || len(st.Launches) != 0 {
			t.Fatalf("a re-registered template inherited %+v", st)
		}
		wantVersions(t, state(t, s, "other"), 1)
		// Deleting the last version deletes the template.
		if err := s.TemplateDelete(t.Context(), "other", ptr(1)); err != nil {
			t.Fatal(err)
		}
		_, err = s.TemplateState(t.Context(), "other")
		wantTemplateNotFound(t, "state after deleting the last version", err)
	})

	t.Run("Deprecation", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		registerN(t, s, "t", 2)
		launch(t, s, "t", 1)
		if err := s.TemplateDeprecate(t.Context(), "t", ptr(2), &db.TemplateDeprecation{DeprecatedBy: ptr("dave"), Reason: ptr("leaks memory")}); err != nil {
			t.Fatal(err)
		}
		_, err := s.TemplateLaunch(t.Context(), "t", 2, nil)
		wantDeprecated(t, "launch of a deprecated version", err, ptr(2), "leaks memory")
		st := state(t, s, "t")
		if d, ok := st.VersionDeprecations[2]; !ok || *d.DeprecatedBy != "dave" || d.DeprecatedAt.IsZero() || st.Deprecation != nil || st.Status() != db.TemplateStatusLaunched {
			t.Fatalf("version deprecations %+v, template %+v, status %s", st.VersionDeprecations, st.Deprecation, st.Status())
		}

		for _, reason := range []string{"superseded", "superseded by t2"} {
			if err := s.TemplateDeprecate(t.Context(), "t", nil, &db.TemplateDeprecation{Reason: ptr(reason)}); err != nil {
				t.Fatal(err)
			}
		}
		st = state(t, s, "t")
		if st.Status() != db.TemplateStatusDeprecated || *st.Deprecation.Reason != "superseded by t2" {
			t.Fatalf("status %s, deprecation %+v; want the newer reason", st.Status(), st.Deprecation)
		}
		_, err = s.TemplateLaunch(t.Context(), "t", 1, nil)
		wantDeprecated(t, "launch into a deprecated template", err, nil, "superseded by t2")
		// A register that would launch is refused and writes nothing, not
		// even a version number; one that does not launch is accepted.
		d := draft("t")
		d.Launch = true
		_, err = s.TemplateRegister(t.Context(), d)
		wantDeprecated(t, "register and launch into a deprecated template", err, nil, "superseded by t2")
		if v := register(t, s, draft("t")); v.Version != 3 {
			t.Fatalf("next version %d, want 3: the refused register took a number", v.Version)
		}

		list := func(include bool) []string {
			sums, err := s.TemplateList(t.Context(), db.TemplateListFilter{IncludeDeprecated: include})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, sum := range sums {
				ids = append(ids, sum.Newest.ID)
			}
			return ids
		}
		registerN(t, s, "fine", 1)
		equalIDs(t, "list", []string{"fine"}, list(false))
		equalIDs(t, "list with the deprecated", []string{"fine", "t"}, list(true))

		// Reviving restores the derived status; a version is revived alone.
		if err := s.TemplateDeprecate(t.Context(), "t", nil, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.TemplateDeprecate(t.Context(), "t", ptr(2), nil); err != nil {
			t.Fatal(err)
		}
		st = state(t, s, "t")
		if st.Status() != db.TemplateStatusLaunched || len(st.VersionDeprecations) != 0 {
			t.Fatalf("revived: status %s, version deprecations %v", st.Status(), st.VersionDeprecations)
		}
		launch(t, s, "t", 2)
		wantTemplateNotFound(t, "deprecate a missing version", s.TemplateDeprecate(t.Context(), "t", ptr(9), &db.TemplateDeprecation{}))
		wantTemplateNotFound(t, "deprecate a missing template", s.TemplateDeprecate(t.Context(), "missing", nil, &db.TemplateDeprecation{}))
	})

	t.Run("List", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		s := open(t, newURL(t), db.Options{InstanceID: "a", Clock: clk.Now})
		if sums, err := s.TemplateList(t.Context(), db.TemplateListFilter{}); err != nil || len(sums) != 0 {
			t.Fatalf("empty registry lists %v, %v", sums, err)
		}
		for _, id := range []string{"b", "a", "c"} {
			register(t, s, draft(id))
			clk.Advance(time.Second)
		}
		register(t, s, draft("b")) // b's newest version is now the newest of all
		clk.Advance(time.Second)
		register(t, s, draft("d"))
		register(t, s, draft("e")) // same instant as d: by id
		launch(t, s, "a", 1)
		sums, err := s.TemplateList(t.Context(), db.TemplateListFilter{})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, sum := range sums {
			ids = append(ids, fmt.Sprintf("%s@%d", sum.Newest.ID, sum.Newest.Version))
			if sum.Newest.Body != "" {
				t.Fatalf("summary of %s carries its body", sum.Newest.ID)
			}
		}
		equalIDs(t, "newest registered first", []string{"d@1", "e@1", "b@2", "c@1", "a@1"}, ids)
		a := sums[4]
		wantPointers(t, a.State, 1, 0, 1)
		sameJSON(t, "summary params", draft("a").Params, a.Newest.Params)
		if a.State.Status() != db.TemplateStatusLaunched || *a.Newest.Name != "Tenant Sync" {
			t.Fatalf("summary of a: %+v", a)
		}
		wantVersions(t, sums[2].State, 2, 1)
	})

	t.Run("RetentionNeverPurgesTemplates", func(t *testing.T) {
		t.Parallel()
		clk := newClock()
		s := open(t, newURL(t), db.Options{InstanceID: "a", Clock: clk.Now})
		registerN(t, s, "t", 2)
		launch(t, s, "t", 1)
		clk.Advance(365 * 24 * time.Hour)
		purge(t, s, db.PurgePolicy{TerminalRuns: time.Second, IdempotencyClaims: time.Second, Instances: time.Second, Audit: time.Second})
		st := state(t, s, "t")
		wantVersions(t, st, 2, 1)
		wantPointers(t, st, 1, 0, 2)
	})

	t.Run("InvalidDraftsWriteNothing", func(t *testing.T) {
		t.Parallel()
		s := fresh(t, newURL, "a")
		long := make([]byte, db.MaxTemplateIDLen+1)
		for i := range long {
			long[i] = 'a'
		}
		bad := map[string]func(d *db.TemplateDraft){
			"empty id":        func(d *db.TemplateDraft) { d.ID = "" },
			"long id":         func(d *db.TemplateDraft) { d.ID = string(long) },
			"uppercase id":    func(d *db.TemplateDraft) { d.ID = "Upper" },
			"id with a slash": func(d *db.TemplateDraft) { d.ID = "a/b" },
			"leading dash":    func(d *db.TemplateDraft) { d.ID = "-a" },
			"format":          func(d *db.TemplateDraft) { d.Format = "toml" },
			"params":          func(d *db.TemplateDraft) { d.Params = json.RawMessage(`[1]`) },
			"channel":         func(d *db.TemplateDraft) { d.Tags = []string{"latest"} },
			"derived channel": func(d *db.TemplateDraft) { d.Tags = []string{"stable"} },
			"channel twice":   func(d *db.TemplateDraft) { d.Tags = []string{"dev", "dev"} },
		}
		for name, edit := range bad {
			d := draft("t")
			edit(&d)
			_, err := s.TemplateRegister(t.Context(), d)
			wantPermanent(t, "register with a bad "+name, err, "template register")
		}
		if sums, err := s.TemplateList(t.Context(), db.TemplateListFilter{IncludeDeprecated: true}); err != nil || len(sums) != 0 {
			t.Fatalf("refused registers wrote %v, %v", sums, err)
		}
		if err := db.CheckTemplateID(string(long[:db.MaxTemplateIDLen])); err != nil {
			t.Fatalf("an id of %d characters: %v", db.MaxTemplateIDLen, err)
		}
		_, err := s.TemplateGet(t.Context(), "t", 1)
		wantTemplateNotFound(t, "get of a missing template", err)
	})
}
