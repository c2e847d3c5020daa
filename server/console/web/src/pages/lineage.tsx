// The lineage graph, whole or around one dataset, with the same edges as a
// table of links for keyboard and screen-reader use.
import { api, ok } from "../api";
import { count } from "../format";
import type { PageProps } from "../lazy";
import { LineageGraph } from "../parts/graph";
import { Link, navigate, withQuery } from "../router";
import { ErrorNotice, Loading, Notice, PageHeader, TableHead, Time, useLoad } from "../ui";

const depths = ["1", "2", "3", "5", "8", "16", "32"];

export default function Lineage({ query }: PageProps) {
  const root = query.get("root");
  const depth = depths.includes(query.get("depth") ?? "") ? (query.get("depth") as string) : "5";
  const graph = useLoad(
    () => ok(api().GET("/v1/catalog/lineage", { params: { query: root ? { root, depth: Number(depth) } : {} } })),
    [root, depth],
  );
  const rootUri = root && graph.data ? graph.data.edges.find((e) => e.src_id === root)?.src_uri ?? graph.data.edges.find((e) => e.dst_id === root)?.dst_uri : undefined;
  return (
    <section>
      <PageHeader
        title="Lineage"
        sub={root ? <>Around <span class="mono">{rootUri ?? root}</span>, up to {depth} hop(s) away.</> : "Every dataset and the pipelines between them."}
      >
        {root && (
          <>
            <label class="inline">
              Hops
              <select value={depth} onChange={(e) => navigate(withQuery("/lineage", { root, depth: e.currentTarget.value }))}>
                {depths.map((d) => (
                  <option key={d} value={d}>
                    {d}
                  </option>
                ))}
              </select>
            </label>
            <Link class="button" href="/lineage">
              Whole graph
            </Link>
          </>
        )}
        <Link class="button" href="/datasets">
          Datasets
        </Link>
      </PageHeader>
      {graph.error !== undefined && <ErrorNotice error={graph.error} retry={graph.reload} />}
      {graph.data === undefined && graph.loading && <Loading what="the lineage" />}
      {graph.data && graph.data.edges.length === 0 && <p class="empty">No lineage recorded yet: run a pipeline first.</p>}
      {graph.data?.truncated && (
        <Notice kind="warn">The graph is too large to show whole: these are its newest edges. Pick a dataset to see the graph around it.</Notice>
      )}
      {graph.data && graph.data.edges.length > 0 && (
        <>
          <LineageGraph edges={graph.data.edges} root={root} />
          <h2>Edges</h2>
          <table class="table">
            <TableHead caption="Lineage edges" cols={["From", "To", "Pipeline", ["Runs", "num"], ["Last records", "num"], "Last seen"]} />
            <tbody>
              {graph.data.edges.map((e, i) => (
                <tr key={i}>
                  <td class="mono wrap">
                    <Link href={`/datasets/${encodeURIComponent(e.src_id)}`}>{e.src_uri}</Link>
                  </td>
                  <td class="mono wrap">
                    <Link href={`/datasets/${encodeURIComponent(e.dst_id)}`}>{e.dst_uri}</Link>
                  </td>
                  <td>
                    {e.pipeline}
                    {e.row && e.row !== "default" ? ` (row ${e.row})` : ""}
                  </td>
                  <td class="num">{count(e.runs)}</td>
                  <td class="num">{count(e.last_records)}</td>
                  <td>
                    <Time iso={e.last_seen} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}
