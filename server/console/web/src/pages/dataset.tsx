// One dataset: where it is, what wrote and read it, its schema now and how
// it changed run over run, and how many records each run moved.
import { useState } from "preact/hooks";
import { api, ok, type Schemas } from "../api";
import { count, short, when } from "../format";
import type { PageProps } from "../lazy";
import { BarChart } from "../parts/chart";
import { Link } from "../router";
import { ErrorNotice, Fields, Loading, PageHeader, TableHead, Time, useLoad } from "../ui";

type Edge = Schemas["CatalogLineageEdge"];
type RecordSchema = Schemas["RecordSchema"];

export default function Dataset({ params }: PageProps) {
  const id = params.id ?? "";
  const d = useLoad(() => ok(api().GET("/v1/catalog/datasets/{id}", { params: { path: { id } } })), [id]);
  if (d.data === undefined) {
    return (
      <section>
        <PageHeader title="Dataset" sub={<span class="mono">{id}</span>} />
        {d.error !== undefined ? <ErrorNotice error={d.error} retry={d.reload} /> : <Loading what="the dataset" />}
      </section>
    );
  }
  const ds = d.data;
  // Oldest first, as a chart reads.
  const points = [...ds.stats].reverse().map((s) => ({
    label: when(s.recorded_at),
    value: s.records,
    title: `${when(s.recorded_at)} · run ${short(s.run_id)}`,
  }));
  return (
    <section>
      <PageHeader title={<span class="mono wrap">{ds.uri}</span>} sub={`${ds.kind} dataset · ${ds.roles.join(" and ")}`}>
        <Link class="button" href={`/lineage?root=${encodeURIComponent(ds.id)}`}>
          Show in the lineage graph
        </Link>
      </PageHeader>
      <Fields
        items={[
          ["Id", <span class="mono">{ds.id}</span>],
          ["Kind", ds.kind],
          ["Roles", ds.roles.join(", ")],
          ["Pipeline", ds.pipeline],
          ["Runs", count(ds.runs)],
          ["Records (last run)", count(ds.last_records)],
          ["Records (all runs)", count(ds.total_records)],
          ["First seen", <Time iso={ds.first_seen} />],
          ["Last seen", <Time iso={ds.last_seen} />],
          ["Last success", <Time iso={ds.last_success} />],
          ["Last run", <Link href={`/runs/${encodeURIComponent(ds.last_run_id)}`}>{short(ds.last_run_id)}</Link>],
        ]}
      />
      <h2>Records per run</h2>
      {points.length === 0 ? <p class="muted">No run has recorded a count yet.</p> : <BarChart points={points} label="Records per run" />}
      <h2>Current schema</h2>
      {ds.current_schema ? <SchemaTable schema={ds.current_schema} /> : <p class="muted">No schema observed yet.</p>}
      <h2>Schema timeline</h2>
      <Timeline versions={ds.schema_timeline} />
      <h2>Lineage</h2>
      <div class="two">
        <div>
          <h3>Upstream</h3>
          <Edges edges={ds.upstream} other={(e) => [e.src_id, e.src_uri]} />
        </div>
        <div>
          <h3>Downstream</h3>
          <Edges edges={ds.downstream} other={(e) => [e.dst_id, e.dst_uri]} />
        </div>
      </div>
    </section>
  );
}

interface Column {
  name: string;
  type: string;
  detail: string;
}

/** The columns of a schema as the catalog records it (JSON Schema properties). */
function columns(schema: RecordSchema): Column[] {
  return Object.entries(schema.properties).map(([name, p]) => {
    const rest = Object.entries(p)
      .filter(([k]) => k !== "type")
      .map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
      .join(", ");
    return { name, type: typeName(p.type), detail: rest };
  });
}

/** A fragment's JSON Schema type: a name, [name, "null"], or absent (several). */
function typeName(t: unknown): string {
  return Array.isArray(t) ? t.join(" | ") : typeof t === "string" ? t : "any";
}

function SchemaTable({ schema }: { schema: RecordSchema }) {
  const cols = columns(schema);
  return (
    <table class="table">
      <TableHead caption="Columns" cols={["Column", "Type", "More"]} />
      <tbody>
        {cols.map((c) => (
          <tr key={c.name}>
            <td class="mono">{c.name}</td>
            <td class="mono">{c.type}</td>
            <td class="mono small">{c.detail}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

const diffKinds = [
  ["added", "+", "Added"],
  ["widened", "~", "Widened"],
  ["changed", "!", "Changed"],
  ["removed", "−", "Removed"],
] as const;

/** A column's type as a schema fragment gives it, with the database's own name. */
function typeText(f: Schemas["ColumnFragment"]): string {
  const t = typeName(f.type);
  return f["x-db-type"] ? `${t} (${f["x-db-type"]})` : t;
}

/** A diff entry: a column's name (removed), or the column with its type before (changed, widened) and now. */
function entry(x: string | Schemas["ColumnChange"]): string {
  if (typeof x === "string") return x;
  return x.from ? `${x.column}: ${typeText(x.from)} → ${typeText(x.to)}` : `${x.column}: ${typeText(x.to)}`;
}

function Timeline({ versions }: { versions: Schemas["CatalogSchemaVersion"][] }) {
  const [open, setOpen] = useState<number | null>(null);
  if (versions.length === 0) return <p class="muted">No schema observed yet.</p>;
  return (
    <ol class="timeline" reversed>
      {[...versions].reverse().map((v) => {
        const diff = v.diff ?? undefined;
        return (
          <li key={v.version}>
            <div class="timeline-head">
              <strong>v{v.version}</strong> <Time iso={v.recorded_at} /> · run{" "}
              <Link href={`/runs/${encodeURIComponent(v.run_id)}`}>{short(v.run_id)}</Link> ·{" "}
              <span class="mono small" title="schema hash">
                {v.schema_hash.slice(0, 12)}
              </span>
            </div>
            {diff ? (
              <ul class="diff">
                {diffKinds.flatMap(([k, sym, label]) =>
                  (diff[k] as (string | Schemas["ColumnChange"])[]).map((x, i) => (
                    <li key={`${k}-${i}`} class={`diff-${k}`}>
                      <span aria-hidden="true">{sym}</span> <span class="visually-hidden">{label}: </span>
                      <span class="mono">{entry(x)}</span>
                    </li>
                  )),
                )}
              </ul>
            ) : (
              <p class="muted small">{v.version === 1 ? "The first schema seen." : "No change recorded."}</p>
            )}
            <button type="button" class="link" aria-expanded={open === v.version} onClick={() => setOpen(open === v.version ? null : v.version)}>
              {open === v.version ? "Hide" : "Show"} the schema of v{v.version}
            </button>
            {open === v.version && <SchemaTable schema={v.schema} />}
          </li>
        );
      })}
    </ol>
  );
}

function Edges({ edges, other }: { edges: Edge[]; other: (e: Edge) => [string, string] }) {
  if (edges.length === 0) return <p class="muted">None.</p>;
  return (
    <ul class="plain edges">
      {edges.map((e) => {
        const [id, uri] = other(e);
        return (
          <li key={`${e.src_id}-${e.dst_id}-${e.pipeline}-${e.row}`}>
            <Link href={`/datasets/${encodeURIComponent(id)}`} class="mono">
              {uri}
            </Link>
            <span class="muted small">
              {" "}
              via {e.pipeline}
              {e.row && e.row !== "default" ? ` (row ${e.row})` : ""} · {count(e.runs)} run(s) · {count(e.last_records)} records last
            </span>
          </li>
        );
      })}
    </ul>
  );
}
