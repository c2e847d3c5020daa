// Client-side routes over the history API: every console page has a real
// path (/runs/ID), which the server answers with the shell, so links can be
// shared, opened in a new tab and reloaded.
import type { AnchorHTMLAttributes, ComponentChildren, TargetedMouseEvent } from "preact";
import { useEffect, useState } from "preact/hooks";

/** Where the console is: the path and its query. */
export interface Location {
  path: string;
  query: URLSearchParams;
}

function current(): Location {
  return { path: location.pathname, query: new URLSearchParams(location.search) };
}

const changed = "faucet:navigate";

let moved = false;

/**
 * Whether the console has gone to another page since it loaded: only then
 * does a page move the focus to its heading (on the first page, focus
 * starts where the browser puts it, before the skip link).
 */
export function navigatedSinceLoad(): boolean {
  return moved;
}

window.addEventListener("popstate", () => {
  moved = true;
});

/** Goes to href (a path with an optional query) without reloading. */
export function navigate(href: string, options: { replace?: boolean } = {}): void {
  moved = true;
  if (options.replace) {
    history.replaceState(null, "", href);
  } else {
    history.pushState(null, "", href);
  }
  window.dispatchEvent(new Event(changed));
}

/** The current location, updated on every navigation. */
export function useLocation(): Location {
  const [loc, setLoc] = useState(current);
  useEffect(() => {
    const update = () => setLoc(current());
    window.addEventListener("popstate", update);
    window.addEventListener(changed, update);
    return () => {
      window.removeEventListener("popstate", update);
      window.removeEventListener(changed, update);
    };
  }, []);
  return loc;
}

/** A path with the query's non-empty entries. */
export function withQuery(path: string, query: Record<string, string | string[] | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    for (const one of Array.isArray(v) ? v : [v]) {
      if (one !== undefined && one !== "") q.append(k, one);
    }
  }
  const s = q.toString();
  return s === "" ? path : `${path}?${s}`;
}

type AnchorProps = AnchorHTMLAttributes<HTMLAnchorElement> & { href: string; children?: ComponentChildren };

/** An anchor that navigates inside the console on a plain click. */
export function Link(props: AnchorProps) {
  const { href, onClick, ...rest } = props;
  const click = (e: TargetedMouseEvent<HTMLAnchorElement>) => {
    if (typeof onClick === "function") onClick(e);
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(href);
  };
  return <a href={href} onClick={click} {...rest} />;
}

/** Matches path against a pattern such as /runs/:id; the params or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const want = pattern.split("/");
  const got = path.replace(/\/+$/, "").split("/");
  if (path === "/" && pattern === "/") return {};
  if (want.length !== got.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < want.length; i++) {
    const w = want[i] ?? "";
    const g = got[i] ?? "";
    if (w.startsWith(":")) {
      if (g === "") return null;
      try {
        params[w.slice(1)] = decodeURIComponent(g);
      } catch {
        return null;
      }
    } else if (w !== g) {
      return null;
    }
  }
  return params;
}
