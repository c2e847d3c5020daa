package triggers

import (
	"testing"
	"time"
)

func TestDueSlots(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	daily, err := cronParser.Parse("CRON_TZ=Europe/Berlin 0 2 * * *")
	if err != nil {
		t.Fatal(err)
	}
	at := func(d, h, m int) time.Time { return time.Date(2026, 3, d, h, m, 0, 0, berlin) }
	for _, tc := range []struct {
		name              string
		after, since, now time.Time
		want              []time.Time
	}{
		{"nothing due yet", at(10, 2, 0), at(10, 1, 0), at(10, 12, 0), nil},
		{"the next slot", at(10, 2, 0), at(10, 1, 0), at(11, 2, 0), []time.Time{at(11, 2, 0)}},
		// Watched throughout (a slow step): every slot fires.
		{"slots while watching", at(10, 2, 0), at(10, 1, 0), at(13, 3, 0), []time.Time{at(11, 2, 0), at(12, 2, 0), at(13, 2, 0)}},
		// Down from the 10th to the 15th: the newest missed slot only,
		// then the slots since the restart.
		{"after downtime", at(10, 2, 0), at(15, 1, 0), at(15, 1, 0), []time.Time{at(14, 2, 0)}},
		{"after downtime and on", at(10, 2, 0), at(15, 1, 0), at(16, 2, 0), []time.Time{at(14, 2, 0), at(15, 2, 0), at(16, 2, 0)}},
		// The newest missed slot fired already (by another member).
		{"missed slot fired", at(14, 2, 0), at(15, 1, 0), at(15, 1, 0), nil},
		// On the spring-forward night (29 March 2026) 02:00 does not exist
		// in Berlin: that day has no slot.
		{"daylight saving", at(28, 2, 0), at(28, 1, 0), at(30, 2, 0), []time.Time{at(30, 2, 0)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := dueSlots(daily, tc.after, tc.since, tc.now, maxSlotsPerStep)
			if len(got) != len(tc.want) {
				t.Fatalf("due %v, want %v", got, tc.want)
			}
			for i := range got {
				if !got[i].Equal(tc.want[i]) {
					t.Fatalf("due %v, want %v", got, tc.want)
				}
			}
		})
	}
	// A year of downtime on a per-minute schedule still costs few steps
	// and yields one slot.
	every, _ := cronParser.Parse("* * * * *")
	got := dueSlots(every, at(1, 0, 0).AddDate(-1, 0, 0), at(1, 0, 0).Add(30*time.Second), at(1, 0, 0).Add(30*time.Second), maxSlotsPerStep)
	if len(got) != 1 || !got[0].Equal(at(1, 0, 0)) {
		t.Fatalf("after a year down: %v", got)
	}
	// A step fires at most maxSlotsPerStep slots; the rest are the next
	// step's.
	if got := dueSlots(every, at(1, 0, 0), at(1, 0, 0), at(1, 12, 0), 5); len(got) != 5 {
		t.Fatalf("%d slots in one step, want 5", len(got))
	}
}
