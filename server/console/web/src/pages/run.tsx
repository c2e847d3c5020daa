// One run: its fields, invocations, callback target and deliveries, doctor
// report, shards and logs, refreshed while it is in flight or a delivery of
// its callback is pending; cancel and delete after a confirmation.
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { allows, api, describe, isTerminal, ok, type RunRecord, type Schemas } from "../api";
import { count, duration } from "../format";
import type { PageProps } from "../lazy";
import { DoctorReport } from "../parts/doctor";
import { Logs } from "../parts/logs";
import { Link, navigate } from "../router";
import { ErrorNotice, Fields, Loading, Notice, PageHeader, Status, TableHead, Time, toast, useConfirm, useLoad } from "../ui";

type Shard = Schemas["ShardRecord"];
type Delivery = Schemas["CallbackDelivery"];

/** Whether the run may still change: in flight, or a delivery still due. */
function changing(r: RunRecord): boolean {
  return !isTerminal(r.status) || (r.callback_deliveries ?? []).some((d) => d.state === "pending");
}

export default function Run({ params, me }: PageProps) {
  const id = params.id ?? "";
  const run = useLoad(() => ok(api().GET("/v1/runs/{id}", { params: { path: { id } } })), [id], (r) =>
    r === undefined || changing(r) ? 1000 : undefined,
  );
  const [dialog, ask] = useConfirm();
  const [busy, setBusy] = useState(false);

  if (run.data === undefined) {
    return (
      <section>
        <PageHeader title="Run" sub={<span class="mono">{id}</span>} />
        {run.error !== undefined ? <ErrorNotice error={run.error} retry={run.reload} /> : <Loading what="the run" />}
      </section>
    );
  }
  const r = run.data;
  const done = isTerminal(r.status);
  const operator = allows(me.role, "operator");

  const cancel = async () => {
    const yes = await ask({
      title: "Cancel this run?",
      body: (
        <p>
          <strong>{r.name ?? r.run_id}</strong> stops at its next batch boundary; a sink that appends keeps what it
          acknowledged, one that overwrites keeps its previous contents.
        </p>
      ),
      confirm: "Cancel the run",
      danger: true,
    });
    if (!yes) return;
    setBusy(true);
    try {
      await ok(api().POST("/v1/runs/{id}/cancel", { params: { path: { id } } }));
      toast("Cancellation requested.");
      run.reload();
    } catch (e) {
      toast(describe(e), "error");
    } finally {
      setBusy(false);
    }
  };

  const remove = async () => {
    const yes = await ask({
      title: "Delete this run?",
      body: (
        <p>
          <strong>{r.name ?? r.run_id}</strong>, its logs and its idempotency key leave the history for good.
        </p>
      ),
      confirm: "Delete the run",
      danger: true,
    });
    if (!yes) return;
    setBusy(true);
    try {
      await ok(api().DELETE("/v1/runs/{id}", { params: { path: { id } } }));
      toast("Run deleted.");
      navigate("/runs");
    } catch (e) {
      toast(describe(e), "error");
      setBusy(false);
    }
  };

  return (
    <section>
      <PageHeader
        title={
          <>
            {r.name ?? "Run"} <Status value={r.status} />
          </>
        }
        sub={<span class="mono">{r.run_id}</span>}
      >
        {operator && !done && (
          <button type="button" class="danger" disabled={busy} onClick={cancel}>
            Cancel run
          </button>
        )}
        {operator && done && (
          <button type="button" class="danger" disabled={busy} onClick={remove}>
            Delete run
          </button>
        )}
      </PageHeader>
      {dialog}
      {run.error !== undefined && <ErrorNotice error={run.error} retry={run.reload} />}
      {r.error && (
        <div class="notice notice-error">
          <p>
            <strong>Error:</strong> <span class="pre">{r.error}</span>
          </p>
        </div>
      )}
      <RunFields r={r} />
      <h2>Invocations</h2>
      <Invocations r={r} />
      <h2>Completion callback</h2>
      <Callback callback={r.callback} />
      {r.callback && <Deliveries r={r} />}
      {r.doctor_report && (
        <>
          <h2>Doctor report</h2>
          <DoctorReport report={r.doctor_report} />
        </>
      )}
      <Shards id={r.run_id} live={!done} sharded={r.status === "sharded"} />
      <h2>Logs</h2>
      <Logs key={r.run_id} runId={r.run_id} live={!done} />
    </section>
  );
}

function RunFields({ r }: { r: RunRecord }) {
  const labels = Object.entries(r.labels);
  const items: [string, ComponentChildren][] = [
    ["Status", <Status value={r.status} />],
    ["Submitted", <Time iso={r.submitted_at} />],
    ["Started", <Time iso={r.started_at} />],
    ["Finished", <Time iso={r.finished_at} />],
    ["Elapsed", duration(r.elapsed_secs)],
    ["Records written", count(r.records_written)],
    ["Attempt", String(r.attempt)],
    ["Idempotency key", r.idempotency_key ? <span class="mono">{r.idempotency_key}</span> : null],
    [
      "Labels",
      labels.length === 0 ? null : (
        <ul class="chips">
          {labels.map(([k, v]) => (
            <li key={k}>
              <span class="mono">{k}</span>={v}
            </li>
          ))}
        </ul>
      ),
    ],
  ];
  if (r.timeout_secs) items.push(["Timeout", duration(r.timeout_secs)]);
  if (r.clock) items.push(["Clock", <span class="mono">{r.clock}</span>]);
  if (r.labels.template) {
    items.push(["Template", <Link href={`/templates/${encodeURIComponent(r.labels.template)}`}>{r.labels.template}</Link>]);
  }
  return <Fields items={items} />;
}

function Invocations({ r }: { r: RunRecord }) {
  if (r.invocations.length === 0) {
    return <p class="muted">{isTerminal(r.status) ? "The run recorded no invocation." : "Recorded when the run finishes."}</p>;
  }
  return (
    <table class="table">
      <TableHead caption="Invocations" cols={["Row", ["Records", "num"], ["Duration", "num"], "Error", "Parent record"]} />
      <tbody>
        {r.invocations.map((inv, i) => (
          <tr key={`${inv.row_id}-${i}`}>
            <td class="mono">{inv.row_id}</td>
            <td class="num">{count(inv.records_written)}</td>
            <td class="num">{duration(inv.duration_ms / 1000)}</td>
            <td>{inv.error ? <span class="error-text pre">{inv.error}</span> : <span class="muted">—</span>}</td>
            <td class="mono">{inv.parent_record_key ?? <span class="muted">—</span>}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Callback({ callback }: { callback: RunRecord["callback"] }) {
  if (!callback) return <p class="muted">No callback: the run was submitted without one.</p>;
  const headers = Object.entries(callback.headers ?? {});
  return (
    <Fields
      items={[
        ["Target", <span class="mono">{`${callback.method ?? "POST"} ${callback.url}`}</span>],
        ["Fires on", callback.on && callback.on.length > 0 ? callback.on.join(", ") : "every terminal status"],
        [
          "Headers",
          headers.length === 0 ? null : (
            <ul class="plain">
              {headers.map(([k, v]) => (
                <li key={k} class="mono">
                  {k}: {v}
                </li>
              ))}
            </ul>
          ),
        ],
      ]}
    />
  );
}

/** The deliveries of the run's callback, each with its state and its last attempt. */
function Deliveries({ r }: { r: RunRecord }) {
  const list: Delivery[] = r.callback_deliveries ?? [];
  if (list.length === 0) {
    return <p class="muted">{isTerminal(r.status) ? "No delivery: the run ended in a status the callback does not fire on." : "Delivered once the run ends."}</p>;
  }
  return (
    <table class="table">
      <TableHead
        caption="Callback deliveries"
        cols={["Delivery", "State", ["Attempts", "num"], "Last attempt", ["Answer", "num"], "Last error", "Next attempt", "Finished"]}
      />
      <tbody>
        {list.map((d) => (
          <tr key={d.delivery_id} data-delivery={d.delivery_id}>
            <td class="mono">{d.delivery_id}</td>
            <td>
              <Status value={d.state} />
            </td>
            <td class="num">{count(d.attempts)}</td>
            <td>
              <Time iso={d.last_attempt_at} />
            </td>
            <td class="num">{d.last_status_code ?? <span class="muted">—</span>}</td>
            <td>{d.last_error ? <span class="error-text pre">{d.last_error}</span> : <span class="muted">—</span>}</td>
            <td>
              <Time iso={d.state === "pending" ? d.next_attempt_at : undefined} />
            </td>
            <td>
              <Time iso={d.finished_at} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The run's shards; nothing for a run that was never split. */
function Shards({ id, live, sharded }: { id: string; live: boolean; sharded: boolean }) {
  // Read again when the run ends, so the table shows the shards' last states.
  const shards = useLoad(() => ok(api().GET("/v1/runs/{id}/shards", { params: { path: { id } } })), [id, live], live ? 2000 : undefined);
  if (!sharded && shards.error === undefined && (shards.data?.shards.length ?? 0) === 0) return null;
  return (
    <>
      <h2>Shards</h2>
      {shards.error !== undefined && <ErrorNotice error={shards.error} retry={shards.reload} />}
      {shards.data && <ShardTable shards={shards.data.shards} />}
    </>
  );
}

/** The shards of a sharded run. */
export function ShardTable({ shards }: { shards: Shard[] }) {
  if (shards.length === 0) return <Notice>The run has not been split into shards yet.</Notice>;
  return (
    <table class="table">
      <TableHead caption="Shards" cols={["Shard", "Status", "Member", ["Attempt", "num"], ["Records", "num"], "Finished", "Error"]} />
      <tbody>
        {shards.map((s) => (
          <tr key={s.shard_id}>
            <td class="mono">{s.shard_id}</td>
            <td>
              <Status value={s.status} />
            </td>
            <td class="mono">{s.owner ?? <span class="muted">—</span>}</td>
            <td class="num">{s.attempt}</td>
            <td class="num">{count(s.records_written)}</td>
            <td>
              <Time iso={s.finished_at} />
            </td>
            <td>{s.error ? <span class="error-text">{s.error}</span> : <span class="muted">—</span>}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
