package db

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestCatalogStatBlocksNumberAndTrim checks a batch's blocks against the
// counts the dataset upserts return: each holds the dataset's newest
// points, at most keep, and its trim range starts where the last batch's
// ended, so consecutive batches trim every block exactly once.
func TestCatalogStatBlocksNumberAndTrim(t *testing.T) {
	at := time.UnixMicro(1_700_000_000_000_000)
	point := func(dataset, run string) CatalogStatWrite {
		return CatalogStatWrite{DatasetID: dataset, RunID: run, RowID: "default", Role: RoleSink, Status: StatusCompleted, RecordedAt: at, Records: 1}
	}
	const keep = 3
	// b's count before the batch is 1, a's 0: b's points are 2 … 6, of
	// which the newest 3 are kept.
	stats := []CatalogStatWrite{point("b", "r1"), point("a", "r1"), point("b", "r2"), point("b", "r3"), point("b", "r4"), point("b", "r5")}
	blocks, err := CatalogStatBlocks(stats, map[string]int64{"a": 1, "b": 6}, keep)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 || blocks[0].DatasetID != "a" || blocks[1].DatasetID != "b" {
		t.Fatalf("blocks %+v, want a's then b's", blocks)
	}
	a, b := blocks[0], blocks[1]
	if a.LastSeq != 1 || a.Points != 1 || a.Floor != 1-keep || a.PrevFloor != -keep {
		t.Errorf("a's block %+v", a)
	}
	if b.LastSeq != 6 || b.Points != keep || b.Floor != 6-keep || b.PrevFloor != 1-keep {
		t.Errorf("b's block %+v", b)
	}
	if a.Trims() || !b.Trims() {
		t.Errorf("trims: a %v, b %v; want only b's, whose count passed %d", a.Trims(), b.Trims(), keep)
	}
	var kept []statPoint
	if err := json.Unmarshal(b.Body, &kept); err != nil {
		t.Fatal(err)
	}
	if len(kept) != keep || kept[0].Run != "r3" || kept[2].Run != "r5" || kept[0].At != at.UnixMicro() {
		t.Errorf("b keeps %+v, want r3 … r5", kept)
	}
	// The next batch of b trims from this one's floor on.
	next, err := CatalogStatBlocks(stats[:1], map[string]int64{"b": 7}, keep)
	if err != nil {
		t.Fatal(err)
	}
	if next[0].PrevFloor != b.Floor || next[0].Floor != 7-keep {
		t.Errorf("next block %+v, want its trim to start at %d", next[0], b.Floor)
	}
	// Read back newest first, a limit cutting into the older block.
	got, err := statsOf([]CatalogStatBlockRow{{LastSeq: 7, Points: 1, Body: next[0].Body}, {LastSeq: 6, Points: keep, Body: b.Body}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].RunID != "r1" || got[1].RunID != "r5" || got[2].RunID != "r4" || !got[1].RecordedAt.Equal(at) {
		t.Errorf("newest 3: %+v", got)
	}
	if _, err := statsOf([]CatalogStatBlockRow{{LastSeq: 6, Points: 2, Body: b.Body}}, 3); err == nil {
		t.Error("a block whose count disagrees with its body decoded")
	}
}

// TestLatestSnapshotsKeepTheNewestTwo checks, on batches with ties, that a
// batch keeps of each pipeline the two a stable sort by time puts last,
// oldest first, the pipelines in name order.
func TestLatestSnapshotsKeepTheNewestTwo(t *testing.T) {
	now := time.UnixMicro(1_700_000_000_000_000).UTC()
	want := func(snaps []ConfigSnapshot) []ConfigSnapshot {
		byName := map[string][]ConfigSnapshot{}
		var names []string
		for _, s := range snaps {
			if s.RecordedAt.IsZero() {
				s.RecordedAt = now
			}
			if byName[s.Pipeline] == nil {
				names = append(names, s.Pipeline)
			}
			byName[s.Pipeline] = append(byName[s.Pipeline], s)
		}
		slices.Sort(names)
		var out []ConfigSnapshot
		for _, n := range names {
			l := byName[n]
			slices.SortStableFunc(l, func(a, b ConfigSnapshot) int { return a.RecordedAt.Compare(b.RecordedAt) })
			out = append(out, l[max(0, len(l)-2):]...)
		}
		return out
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 500 {
		var snaps []ConfigSnapshot
		for i := range rng.IntN(12) {
			s := ConfigSnapshot{Pipeline: string(rune('a' + rng.IntN(3))), RunID: fmt.Sprintf("r%d", i)}
			// Few distinct times, so ties are common; some unset (now).
			if k := rng.IntN(5); k > 0 {
				s.RecordedAt = now.Add(time.Duration(k-2) * time.Second)
			}
			snaps = append(snaps, s)
		}
		got := latestSnapshots(slices.Clone(snaps), now)
		exp := want(snaps)
		if !slices.EqualFunc(got, exp, func(a, b ConfigSnapshot) bool {
			return a.Pipeline == b.Pipeline && a.RunID == b.RunID && a.RecordedAt.Equal(b.RecordedAt)
		}) {
			t.Fatalf("round %d: from %+v kept %+v, want %+v", round, snaps, got, exp)
		}
	}
}
