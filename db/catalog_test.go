package db

import (
	"encoding/json"
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
