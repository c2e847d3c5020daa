// The runs list: filters in the URL, live status (the page is polled while
// the tab is visible), and cursor pagination, newest first.
import { useEffect, useState } from "preact/hooks";
import { api, ok, type RunStatus } from "../api";
import { count, duration, fromLocalInput, short, toLocalInput } from "../format";
import type { PageProps } from "../lazy";
import { Link, navigate, withQuery } from "../router";
import { ErrorNotice, Loading, PageHeader, Status, TableHead, TextField, Time, useLoad } from "../ui";

const statuses: RunStatus[] = ["pending", "queued", "running", "sharded", "completed", "failed", "cancelled"];
const pageSizes = ["25", "50", "100", "200"];

/** How often the list is refreshed. */
const pollMs = 2000;

/** The runs page's filters, as its URL holds them. */
interface Filters {
  status: RunStatus[];
  name: string;
  since: string;
  until: string;
  limit: string;
}

function filtersOf(q: URLSearchParams): Filters {
  const limit = Number(q.get("limit"));
  return {
    status: q.getAll("status").filter((s): s is RunStatus => statuses.includes(s as RunStatus)),
    name: q.get("name") ?? "",
    since: q.get("since") ?? "",
    until: q.get("until") ?? "",
    // The API's bounds; a link may ask for any size within them.
    limit: Number.isInteger(limit) && limit >= 1 && limit <= 500 ? String(limit) : "50",
  };
}

function href(f: Filters, cursor?: string, from?: string[]): string {
  return withQuery("/runs", {
    status: f.status,
    name: f.name,
    since: f.since,
    until: f.until,
    limit: f.limit === "50" ? "" : f.limit,
    cursor,
    // The cursors of the pages before this one, for "Newer".
    from: from && from.length > 0 ? from.join(",") : undefined,
  });
}

export function Runs({ query }: PageProps) {
  const filters = filtersOf(query);
  const cursor = query.get("cursor") ?? "";
  const from = (query.get("from") ?? "").split(",").filter((c) => c !== "");
  const key = query.toString();
  const runs = useLoad(
    () =>
      ok(
        api().GET("/v1/runs", {
          params: {
            query: {
              ...(filters.status.length > 0 ? { status: filters.status } : {}),
              ...(filters.name ? { name: filters.name } : {}),
              ...(filters.since ? { since: filters.since } : {}),
              ...(filters.until ? { until: filters.until } : {}),
              ...(cursor ? { cursor } : {}),
              limit: Number(filters.limit),
            },
          },
        }),
      ),
    [key],
    pollMs,
  );

  return (
    <section>
      <PageHeader title="Runs" sub="Every run this server's history holds, newest first. The list refreshes itself.">
        <Link class="button primary" href="/submit">
          Submit a run
        </Link>
      </PageHeader>
      <FilterForm filters={filters} />
      {runs.error !== undefined && <ErrorNotice error={runs.error} retry={runs.reload} />}
      {runs.data === undefined && runs.loading && <Loading what="runs" />}
      {runs.data && (
        <>
          <table class="table runs">
            <TableHead caption="Runs" cols={["Status", "Name", "Run", "Submitted", ["Duration", "num"], ["Records", "num"], ["Attempt", "num"]]} />
            <tbody>
              {runs.data.runs.map((r) => (
                <tr key={r.run_id} data-run={r.run_id}>
                  <td>
                    <Status value={r.status} />
                  </td>
                  <td>
                    <Link href={`/runs/${encodeURIComponent(r.run_id)}`}>{r.name ?? <span class="muted">(no name)</span>}</Link>
                  </td>
                  {/* elementtiming: the browser records when the runs' text was painted. */}
                  <td class="mono" title={r.run_id} elementtiming="runs">
                    {short(r.run_id)}
                  </td>
                  <td>
                    <Time iso={r.submitted_at} />
                  </td>
                  <td class="num">{duration(r.elapsed_secs)}</td>
                  <td class="num">{count(r.records_written)}</td>
                  <td class="num">{r.attempt}</td>
                </tr>
              ))}
            </tbody>
          </table>
          {runs.data.runs.length === 0 && (
            <p class="empty">{cursor || key ? "No run matches these filters." : "No runs yet: submit one."}</p>
          )}
          <CursorPager
            label="Pages of runs"
            names={["Newest", "← Newer", "Older →"]}
            cursor={cursor}
            from={from}
            next={runs.data.runs.length > 0 ? runs.data.next_cursor : null}
            href={(c, f) => href(filters, c, f)}
          />
        </>
      )}
    </section>
  );
}

/**
 * The pager of a keyset-paged list: its first page, the page before this
 * one (from holds the cursors that led here, oldest first) and the next
 * (next is the server's next_cursor, null on the last page). href makes a
 * page's address from its cursor and the cursors before it.
 */
export function CursorPager(props: {
  label: string;
  names: [string, string, string];
  cursor: string;
  from: string[];
  next: string | null | undefined;
  href: (cursor?: string, from?: string[]) => string;
}) {
  const { cursor, from, next, href, names } = props;
  return (
    <nav class="pager" aria-label={props.label}>
      <PageLink href={cursor ? href() : undefined}>{names[0]}</PageLink>
      <PageLink href={cursor ? href(from[from.length - 1], from.slice(0, -1)) : undefined}>{names[1]}</PageLink>
      <PageLink href={next ? href(next, cursor ? [...from, cursor] : from) : undefined}>{names[2]}</PageLink>
    </nav>
  );
}

/** A pager link, or its disabled look when there is no such page. */
function PageLink({ href, children }: { href: string | undefined; children: string }) {
  if (href === undefined) {
    return (
      <span class="button disabled" aria-disabled="true">
        {children}
      </span>
    );
  }
  return (
    <Link class="button" href={href}>
      {children}
    </Link>
  );
}

function FilterForm({ filters }: { filters: Filters }) {
  const [f, setF] = useState<Filters>(filters);
  useEffect(() => setF(filters), [JSON.stringify(filters)]);
  const toggle = (s: RunStatus) =>
    setF({ ...f, status: f.status.includes(s) ? f.status.filter((x) => x !== s) : [...f.status, s] });
  return (
    <form
      class="filters"
      aria-label="Filter runs"
      onSubmit={(e) => {
        e.preventDefault();
        navigate(href(f));
      }}
    >
      <fieldset class="statuses">
        <legend>Status</legend>
        {statuses.map((s) => (
          <label key={s} class="check">
            <input type="checkbox" name="status" value={s} checked={f.status.includes(s)} onChange={() => toggle(s)} />
            {s}
          </label>
        ))}
      </fieldset>
      <TextField id="f-name" label="Name (exact)" value={f.name} onValue={(name) => setF({ ...f, name })} />
      <div class="field">
        <label for="f-since">Submitted from</label>
        <input
          id="f-since"
          type="datetime-local"
          value={toLocalInput(f.since)}
          onInput={(e) => setF({ ...f, since: fromLocalInput(e.currentTarget.value) })}
        />
      </div>
      <div class="field">
        <label for="f-until">Submitted before</label>
        <input
          id="f-until"
          type="datetime-local"
          value={toLocalInput(f.until)}
          onInput={(e) => setF({ ...f, until: fromLocalInput(e.currentTarget.value) })}
        />
      </div>
      <div class="field">
        <label for="f-limit">Per page</label>
        <select id="f-limit" value={f.limit} onChange={(e) => setF({ ...f, limit: e.currentTarget.value })}>
          {(pageSizes.includes(f.limit) ? pageSizes : [...pageSizes, f.limit]).map((n) => (
            <option key={n} value={n}>
              {n}
            </option>
          ))}
        </select>
      </div>
      <div class="filter-actions">
        <button type="submit" class="primary">
          Apply
        </button>
        <Link class="button" href="/runs">
          Clear
        </Link>
      </div>
    </form>
  );
}
