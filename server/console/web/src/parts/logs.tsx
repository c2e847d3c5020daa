// A run's logs: the live tail over server-sent events while the run is in
// flight (pause holds new lines back, follow keeps the newest in view), the
// persisted lines, page by page, once it has finished.
import { followLogs } from "@faucet-dev/faucet-client";
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";
import { api, describe, ok, type LogLine } from "../api";

/** Lines kept on the page; older ones leave the view (not the history). */
const maxLines = 5000;
/** Persisted lines read per request. */
const pageSize = 1000;

const levels = ["debug", "info", "warn", "error"] as const;

export function Logs({ runId, live }: { runId: string; live: boolean }) {
  const [lines, setLines] = useState<LogLine[]>([]);
  const [dropped, setDropped] = useState(0);
  const [state, setState] = useState<"loading" | "following" | "ended" | "complete" | "more">("loading");
  const [error, setError] = useState<string | null>(null);
  const [truncated, setTruncated] = useState<string | null>(null);
  const [paused, setPaused] = useState(false);
  const [follow, setFollow] = useState(true);
  const [minLevel, setMinLevel] = useState<(typeof levels)[number]>("debug");
  const [attempt, setAttempt] = useState(0);
  const held = useRef<LogLine[]>([]);
  const pending = useRef<LogLine[]>([]);
  const frame = useRef<number | null>(null);
  const pausedRef = useRef(paused);
  pausedRef.current = paused;
  const lastSeq = useRef(0);
  const [heldCount, setHeldCount] = useState(0);
  const box = useRef<HTMLOListElement>(null);
  // The mode is chosen once: a run that ends while followed keeps its
  // stream's lines rather than reloading them.
  const [mode] = useState<"follow" | "persisted">(live ? "follow" : "persisted");

  const append = (add: LogLine[]) => {
    if (add.length === 0) return;
    lastSeq.current = add[add.length - 1]?.seq ?? lastSeq.current;
    setLines((old) => {
      const all = old.concat(add);
      if (all.length <= maxLines) return all;
      setDropped((d) => d + all.length - maxLines);
      return all.slice(all.length - maxLines);
    });
  };

  // Lines arrive in bursts: render them once a frame.
  const queue = (l: LogLine) => {
    if (pausedRef.current) {
      held.current.push(l);
      setHeldCount(held.current.length);
      return;
    }
    pending.current.push(l);
    if (frame.current === null) {
      frame.current = requestAnimationFrame(() => {
        frame.current = null;
        const add = pending.current;
        pending.current = [];
        append(add);
      });
    }
  };

  useEffect(() => {
    if (mode !== "follow") return;
    const ctrl = new AbortController();
    setState("following");
    setError(null);
    (async () => {
      try {
        const opts = lastSeq.current > 0 ? { signal: ctrl.signal, after: lastSeq.current } : { signal: ctrl.signal };
        for await (const ev of followLogs(api(), runId, opts)) {
          if (ev.event === "log") queue(ev.data);
          else if (ev.event === "truncated") setTruncated(ev.data.reason);
          else if (ev.event === "end") setState("ended");
        }
        setState((s) => (s === "following" ? "ended" : s));
      } catch (e) {
        if (!ctrl.signal.aborted) setError(describe(e));
      }
    })();
    return () => {
      ctrl.abort();
      if (frame.current !== null) cancelAnimationFrame(frame.current);
      frame.current = null;
    };
  }, [runId, mode, attempt]);

  const loadPage = async (after: number) => {
    try {
      const page = await ok(
        api().GET("/v1/runs/{id}/logs", { params: { path: { id: runId }, query: { format: "json", after, limit: pageSize } } }),
      );
      append(page.lines);
      if (page.truncated) setTruncated("the history keeps only a run's newest lines; earlier ones were dropped");
      setState(page.lines.length < pageSize ? "complete" : "more");
      setError(null);
    } catch (e) {
      setError(describe(e));
      setState("complete");
    }
  };

  useEffect(() => {
    if (mode === "persisted") void loadPage(0);
  }, [runId, mode]);

  useLayoutEffect(() => {
    const el = box.current;
    if (el && follow) el.scrollTop = el.scrollHeight;
  }, [lines, follow]);

  const resume = () => {
    const h = held.current;
    held.current = [];
    setHeldCount(0);
    setPaused(false);
    append(h);
  };

  const minRank = levels.indexOf(minLevel);
  const shown = minRank === 0 ? lines : lines.filter((l) => levels.indexOf(l.level) >= minRank);

  return (
    <div class="logs">
      <div class="logs-bar">
        <span role="status" class="muted">
          {state === "loading" && "Loading lines…"}
          {state === "following" && (paused ? `Paused: ${heldCount} new line(s) held back` : "Following the live tail")}
          {state === "ended" && "The run ended; its stream closed."}
          {(state === "complete" || state === "more") && `${lines.length} persisted line(s)`}
        </span>
        {mode === "follow" && state === "following" && (
          <button type="button" aria-pressed={paused} onClick={() => (paused ? resume() : setPaused(true))}>
            {paused ? "Resume" : "Pause"}
          </button>
        )}
        <label class="check">
          <input type="checkbox" checked={follow} onChange={(e) => setFollow(e.currentTarget.checked)} />
          Keep newest in view
        </label>
        <label class="inline">
          Level
          <select value={minLevel} onChange={(e) => setMinLevel(e.currentTarget.value as (typeof levels)[number])}>
            {levels.map((l) => (
              <option key={l} value={l}>
                {l === "debug" ? "all" : `${l} and above`}
              </option>
            ))}
          </select>
        </label>
      </div>
      {truncated && <p class="notice notice-warn">Lines were dropped: {truncated}.</p>}
      {dropped > 0 && <p class="muted small">{dropped} older line(s) left this view.</p>}
      {error && (
        <div class="notice notice-error" role="alert">
          <p>The logs could not be read: {error}</p>
          {mode === "follow" && (
            <button type="button" onClick={() => setAttempt((n) => n + 1)}>
              Reconnect
            </button>
          )}
        </div>
      )}
      <ol
        class="log-lines"
        ref={box}
        tabIndex={0}
        aria-label="Log lines"
        onScroll={(e) => {
          const el = e.currentTarget;
          const atBottom = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
          if (!atBottom && follow) setFollow(false);
        }}
      >
        {shown.map((l) => (
          <li key={l.seq} class={`log-${l.level}`}>
            <time dateTime={l.ts}>{l.ts.slice(11, 23)}</time>
            <span class="level">{l.level}</span>
            <span class="text">{l.line}</span>
          </li>
        ))}
        {shown.length === 0 && state !== "loading" && <li class="muted">No lines.</li>}
      </ol>
      {state === "more" && (
        <button type="button" onClick={() => void loadPage(lastSeq.current)}>
          Load more lines
        </button>
      )}
    </div>
  );
}
