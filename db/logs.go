package db

import (
	"context"
	"time"
)

func (s *store) RunLogAppend(ctx context.Context, runID string, lines []RunLogLine, limit LogCap) error {
	if len(lines) == 0 {
		return nil
	}
	return fail(ctx, "run log append", s.d.RunLogAppend(ctx, &RunLogAppendParams{
		RunID: runID, Lines: normalLines(lines), Trim: logTrim(limit, s.now()),
	}))
}

func (s *store) RunLogList(ctx context.Context, runID string, after int64, limit int) (RunLogPage, error) {
	if limit <= 0 {
		limit = DefaultRunLogLimit
	}
	page, err := s.d.RunLogList(ctx, &RunLogListParams{RunID: runID, After: after, Limit: limit})
	return failed(ctx, "run log list", page, err)
}

func (s *store) RunLogPurge(ctx context.Context, olderThan time.Duration) (int, error) {
	n, err := s.d.RunLogPurge(ctx, s.now().Add(-olderThan))
	return failed(ctx, "run log purge", n, err)
}

// logTrim is the trim a cap asks for; nil when it keeps every line.
func logTrim(limit LogCap, now time.Time) *LogTrim {
	if limit.Keep <= 0 {
		return nil
	}
	return &LogTrim{Keep: int64(limit.Keep), BlockStart: limit.From, BlockEnd: limit.To, Now: now}
}

// normalLines returns lines with their timestamps as stored.
func normalLines(lines []RunLogLine) []RunLogLine {
	out := make([]RunLogLine, len(lines))
	for i, l := range lines {
		l.TS = micro(l.TS)
		out[i] = l
	}
	return out
}
