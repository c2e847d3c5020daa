// The data catalog: every dataset the server's pipelines read or wrote,
// searchable by URI and filterable by connector kind, newest activity first.
import { useEffect, useState } from "preact/hooks";
import { api, ok } from "../api";
import { count } from "../format";
import type { PageProps } from "../lazy";
import { Link, navigate, withQuery } from "../router";
import { ErrorNotice, Loading, PageHeader, TableHead, TextField, Time, useLoad } from "../ui";
import { CursorPager } from "./runs";

export default function Datasets({ query }: PageProps) {
  const q = query.get("q") ?? "";
  const kind = query.get("kind") ?? "";
  const cursor = query.get("cursor") ?? "";
  const from = (query.get("from") ?? "").split(",").filter((c) => c !== "");
  const page = useLoad(
    () =>
      ok(
        api().GET("/v1/catalog/datasets", {
          params: { query: { q: q || undefined, kind: kind || undefined, cursor: cursor || undefined, limit: 50 } },
        }),
      ),
    [q, kind, cursor],
  );
  const [text, setText] = useState(q);
  const [k, setK] = useState(kind);
  useEffect(() => {
    setText(q);
    setK(kind);
  }, [q, kind]);
  const here = (c?: string, f?: string[]) => withQuery("/datasets", { q, kind, cursor: c, from: f && f.length > 0 ? f.join(",") : undefined });

  return (
    <section>
      <PageHeader title="Datasets" sub="What this server's pipelines read and wrote, run over run.">
        <Link class="button" href="/lineage">
          Lineage graph
        </Link>
      </PageHeader>
      <form
        class="filters"
        role="search"
        aria-label="Search datasets"
        onSubmit={(e) => {
          e.preventDefault();
          navigate(withQuery("/datasets", { q: text.trim(), kind: k.trim() }));
        }}
      >
        <TextField id="d-q" label="URI contains" grow value={text} onValue={setText} />
        <TextField id="d-kind" label="Connector kind" placeholder="csv, postgres, …" value={k} onValue={setK} />
        <div class="filter-actions">
          <button type="submit" class="primary">
            Search
          </button>
          <Link class="button" href="/datasets">
            Clear
          </Link>
        </div>
      </form>
      {page.error !== undefined && <ErrorNotice error={page.error} retry={page.reload} />}
      {page.data === undefined && page.loading && <Loading what="datasets" />}
      {page.data && (
        <>
          <table class="table">
            <TableHead caption="Datasets" cols={["Dataset", "Kind", "Role", "Pipeline", ["Runs", "num"], ["Last records", "num"], ["Schema versions", "num"], "Last success"]} />
            <tbody>
              {page.data.datasets.map((d) => (
                <tr key={d.id}>
                  <td class="mono wrap">
                    <Link href={`/datasets/${encodeURIComponent(d.id)}`}>{d.uri}</Link>
                  </td>
                  <td>{d.kind}</td>
                  <td>{d.roles.join(", ")}</td>
                  <td>{d.pipeline}</td>
                  <td class="num">{count(d.runs)}</td>
                  <td class="num">{count(d.last_records)}</td>
                  <td class="num">{d.schema_versions}</td>
                  <td>
                    <Time iso={d.last_success} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {page.data.datasets.length === 0 && (
            <p class="empty">{q || kind ? "No dataset matches." : "No dataset catalogued yet: run a pipeline first."}</p>
          )}
          <CursorPager
            label="Pages of datasets"
            names={["First", "← Previous", "Next →"]}
            cursor={cursor}
            from={from}
            next={page.data.next_cursor}
            href={here}
          />
        </>
      )}
    </section>
  );
}
