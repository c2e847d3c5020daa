// The console's shared pieces: status badges, times, notices, the
// confirmation dialog, toasts, and the hooks that load and poll data.
// Everything a server sent is rendered as text (JSX children), never as
// markup.
import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import { describe } from "./api";
import { ago, when } from "./format";
import { navigatedSinceLoad } from "./router";

/** A run, shard or template status as a labelled badge. */
export function Status({ value }: { value: string }) {
  return <span class={`status status-${value.replace(/[^a-z-]/g, "")}`}>{value}</span>;
}

/** An instant, local, with the exact value as its title. */
export function Time({ iso, relative }: { iso: string | null | undefined; relative?: boolean }) {
  if (!iso) return <span class="muted">—</span>;
  return (
    <time dateTime={iso} title={iso}>
      {relative ? ago(iso) : when(iso)}
    </time>
  );
}

/** An error the page could not recover from by itself. */
export function ErrorNotice({ error, retry }: { error: unknown; retry?: () => void }) {
  return (
    <div class="notice notice-error" role="alert">
      <p>{describe(error)}</p>
      {retry && (
        <button type="button" onClick={retry}>
          Try again
        </button>
      )}
    </div>
  );
}

export function Notice({ children, kind = "info" }: { children: ComponentChildren; kind?: "info" | "warn" }) {
  return <div class={`notice notice-${kind}`}>{children}</div>;
}

export function Loading({ what }: { what: string }) {
  return (
    <p class="muted" role="status">
      Loading {what}…
    </p>
  );
}

/**
 * A page's heading, focused when the page opens so that a screen reader
 * announces the new page, with the page's actions beside it.
 */
export function PageHeader({ title, sub, children }: { title: ComponentChildren; sub?: ComponentChildren; children?: ComponentChildren }) {
  const h = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    if (navigatedSinceLoad()) h.current?.focus({ preventScroll: true });
  }, []);
  return (
    <header class="page-header">
      <div>
        <h1 tabIndex={-1} ref={h}>
          {title}
        </h1>
        {sub && <p class="page-sub">{sub}</p>}
      </div>
      {children && <div class="actions">{children}</div>}
    </header>
  );
}

/** A labelled one-line text input. */
export function TextField(props: {
  id: string;
  label: string;
  value: string;
  onValue: (v: string) => void;
  placeholder?: string;
  grow?: boolean;
}) {
  return (
    <div class={props.grow ? "field grow" : "field"}>
      <label for={props.id}>{props.label}</label>
      <input
        id={props.id}
        type="text"
        value={props.value}
        placeholder={props.placeholder}
        onInput={(e) => props.onValue(e.currentTarget.value)}
      />
    </div>
  );
}

/** The end of a form: what went wrong, and its submit button. */
export function FormEnd({ error, busy, label, busyLabel }: { error: string | null; busy: boolean; label: string; busyLabel: string }) {
  return (
    <>
      {error && (
        <p class="field-error" role="alert">
          {error}
        </p>
      )}
      <div class="form-actions">
        <button type="submit" class="primary" disabled={busy}>
          {busy ? busyLabel : label}
        </button>
      </div>
    </>
  );
}

/**
 * A table's caption, for screen readers (the heading above it shows it), and
 * its header row; a column named as [name, "num"] holds numbers.
 */
export function TableHead({ caption, cols }: { caption: string; cols: (string | [string, "num"])[] }) {
  return (
    <>
      <caption class="visually-hidden">{caption}</caption>
      <thead>
        <tr>
          {cols.map((c) =>
            typeof c === "string" ? (
              <th key={c} scope="col">
                {c}
              </th>
            ) : (
              <th key={c[0]} scope="col" class="num">
                {c[0]}
              </th>
            ),
          )}
        </tr>
      </thead>
    </>
  );
}

/** Label/value pairs. */
export function Fields({ items }: { items: [string, ComponentChildren][] }) {
  return (
    <dl class="fields">
      {items.map(([k, v]) => (
        <div key={k}>
          <dt>{k}</dt>
          <dd>{v ?? <span class="muted">—</span>}</dd>
        </div>
      ))}
    </dl>
  );
}

// Toasts: short confirmations of what an action did, announced politely.

interface Toast {
  id: number;
  text: string;
  kind: "ok" | "error";
}

let toastSeq = 0;
const toastListeners = new Set<(t: Toast[]) => void>();
let toasts: Toast[] = [];

/** Shows a short message for a few seconds. */
export function toast(text: string, kind: "ok" | "error" = "ok"): void {
  const t = { id: ++toastSeq, text, kind };
  toasts = [...toasts, t];
  toastListeners.forEach((f) => f(toasts));
  setTimeout(() => {
    toasts = toasts.filter((x) => x.id !== t.id);
    toastListeners.forEach((f) => f(toasts));
  }, 6000);
}

export function Toasts() {
  const [list, setList] = useState<Toast[]>(toasts);
  useEffect(() => {
    toastListeners.add(setList);
    return () => {
      toastListeners.delete(setList);
    };
  }, []);
  return (
    <div class="toasts" role="status" aria-live="polite">
      {list.map((t) => (
        <div key={t.id} class={`toast toast-${t.kind}`}>
          {t.text}
        </div>
      ))}
    </div>
  );
}

// The confirmation dialog: a modal <dialog>, so focus is trapped and Escape
// cancels, as the browser does it.

export interface ConfirmOptions {
  title: string;
  body: ComponentChildren;
  confirm: string;
  danger?: boolean;
}

/** A dialog element and the function that asks a question with it. */
export function useConfirm(): [ComponentChildren, (o: ConfirmOptions) => Promise<boolean>] {
  const ref = useRef<HTMLDialogElement>(null);
  const [opts, setOpts] = useState<ConfirmOptions | null>(null);
  const resolver = useRef<((v: boolean) => void) | null>(null);
  const ask = useCallback((o: ConfirmOptions) => {
    setOpts(o);
    return new Promise<boolean>((resolve) => {
      resolver.current = resolve;
    });
  }, []);
  useEffect(() => {
    if (opts && ref.current && !ref.current.open) ref.current.showModal();
  }, [opts]);
  const close = (v: boolean) => {
    ref.current?.close();
    setOpts(null);
    resolver.current?.(v);
    resolver.current = null;
  };
  const dialog = (
    <dialog ref={ref} class="dialog" aria-labelledby="confirm-title" onCancel={() => close(false)}>
      {opts && (
        <form
          method="dialog"
          onSubmit={(e) => {
            e.preventDefault();
            close(true);
          }}
        >
          <h2 id="confirm-title">{opts.title}</h2>
          <div class="dialog-body">{opts.body}</div>
          <div class="dialog-actions">
            <button type="button" onClick={() => close(false)}>
              Keep it
            </button>
            <button type="submit" class={opts.danger ? "danger" : "primary"}>
              {opts.confirm}
            </button>
          </div>
        </form>
      )}
    </dialog>
  );
  return [dialog, ask];
}

/** What an asynchronous load gave so far. */
export interface Loaded<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/**
 * Loads with load whenever deps change, and again every pollMs while the
 * tab is visible (a failed poll keeps the last data and shows the error).
 */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[], pollMs?: number | ((d: T | undefined) => number | undefined)): Loaded<T> {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({
    data: undefined,
    error: undefined,
    loading: true,
  });
  const [tick, setTick] = useState(0);
  const reload = useCallback(() => setTick((n) => n + 1), []);
  const dataRef = useRef<T | undefined>(undefined);
  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const run = async () => {
      try {
        const data = await load();
        if (!live) return;
        dataRef.current = data;
        setState({ data, error: undefined, loading: false });
      } catch (error) {
        if (!live) return;
        setState((s) => ({ data: s.data, error, loading: false }));
      }
      schedule();
    };
    const schedule = () => {
      const ms = typeof pollMs === "function" ? pollMs(dataRef.current) : pollMs;
      if (!live || ms === undefined) return;
      timer = setTimeout(() => {
        if (document.visibilityState === "hidden") {
          schedule();
        } else {
          void run();
        }
      }, ms);
    };
    void run();
    return () => {
      live = false;
      if (timer !== undefined) clearTimeout(timer);
    };
  }, [...deps, tick]);
  return { ...state, reload };
}
