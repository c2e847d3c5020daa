// Pages other than the runs list load on first use, so the first page a
// person sees does not wait for the editor, the graph or the chart code.
import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import type { Whoami } from "./api";
import { ErrorNotice, Loading } from "./ui";

/** What every page gets: the route's params, the query and the caller. */
export interface PageProps {
  params: Record<string, string>;
  query: URLSearchParams;
  me: Whoami;
}

type Page = (p: PageProps) => JSX.Element | null;

/** A page whose module is imported when it is first shown. */
export function lazyPage(load: () => Promise<{ default: Page }>, what: string): Page {
  let loaded: Page | undefined;
  return function Lazy(props: PageProps) {
    const [page, setPage] = useState<Page | undefined>(() => loaded);
    const [error, setError] = useState<unknown>(undefined);
    useEffect(() => {
      if (page) return;
      load().then(
        (m) => {
          loaded = m.default;
          setPage(() => m.default);
        },
        setError,
      );
    }, []);
    if (error !== undefined) return <ErrorNotice error={error} />;
    if (!page) return <Loading what={what} />;
    const P = page;
    return <P {...props} />;
  };
}
