// The cluster: each live member with its slots and what it executes, and
// the shards of the runs split across members.
import { api, ok } from "../api";
import { short } from "../format";
import type { PageProps } from "../lazy";
import { Link } from "../router";
import { ErrorNotice, Loading, Notice, PageHeader, TableHead, Time, useLoad } from "../ui";
import { ShardTable } from "./run";

const pollMs = 2000;

export default function Cluster(_: PageProps) {
  const view = useLoad(() => ok(api().GET("/v1/cluster")), [], pollMs);
  const sharded = useLoad(
    () => ok(api().GET("/v1/runs", { params: { query: { status: ["sharded"], limit: 20 } } })),
    [],
    pollMs,
  );
  return (
    <section>
      <PageHeader title="Cluster" sub="The servers sharing this history, their execution slots, and what each one runs." />
      {view.error !== undefined && <ErrorNotice error={view.error} retry={view.reload} />}
      {view.data === undefined && view.loading && <Loading what="the cluster" />}
      {view.data && !view.data.enabled && (
        <Notice>This server runs on its own (without --cluster): it executes every run it accepts.</Notice>
      )}
      {view.data?.enabled && (
        <>
          <h2>Members ({view.data.members.length})</h2>
          <table class="table">
            <TableHead caption="Members" cols={["Member", "Address", "Started", "Last heartbeat", "Slots in use", "Executing"]} />
            <tbody>
              {view.data.members.map((m) => (
                <tr key={m.instance_id}>
                  <td class="mono">
                    {m.instance_id}
                    {m.instance_id === view.data?.instance && <span class="badge">this server</span>}
                  </td>
                  <td class="mono">{m.listen || "—"}</td>
                  <td>
                    <Time iso={m.started_at} />
                  </td>
                  <td>
                    <Time iso={m.last_heartbeat} relative />
                  </td>
                  <td>
                    <meter min={0} max={Math.max(1, m.max_concurrent)} value={m.in_flight} aria-label={`Slots of ${m.instance_id}`}>
                      {m.in_flight}/{m.max_concurrent}
                    </meter>{" "}
                    {m.in_flight}/{m.max_concurrent}
                  </td>
                  <td>
                    {m.work.length === 0 ? (
                      <span class="muted">idle</span>
                    ) : (
                      <ul class="plain">
                        {m.work.map((w) => (
                          <li key={`${w.run_id}/${w.shard_id ?? ""}`}>
                            <Link href={`/runs/${encodeURIComponent(w.run_id)}`}>{w.name ?? short(w.run_id)}</Link>
                            {w.shard_id && <span class="muted small"> shard {w.shard_id}</span>}
                          </li>
                        ))}
                      </ul>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
      <h2>Sharded runs in progress</h2>
      {sharded.error !== undefined && <ErrorNotice error={sharded.error} retry={sharded.reload} />}
      {sharded.data && sharded.data.runs.length === 0 && <p class="muted">None.</p>}
      {sharded.data?.runs.map((r) => <ShardedRun key={r.run_id} id={r.run_id} name={r.name ?? r.run_id} />)}
    </section>
  );
}

function ShardedRun({ id, name }: { id: string; name: string }) {
  const shards = useLoad(() => ok(api().GET("/v1/runs/{id}/shards", { params: { path: { id } } })), [id], pollMs);
  return (
    <article class="sharded">
      <h3>
        <Link href={`/runs/${encodeURIComponent(id)}`}>{name}</Link>
      </h3>
      {shards.error !== undefined && <ErrorNotice error={shards.error} />}
      {shards.data && <ShardTable shards={shards.data.shards} />}
    </article>
  );
}
