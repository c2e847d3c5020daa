// One template: its versions and the channels that point at them, the
// launch log and its deprecation, the release actions (launch, roll back,
// point a channel, deprecate or revive, delete), and a run triggered with
// params.
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { allows, api, describe, ok, type Schemas } from "../api";
import type { PageProps } from "../lazy";
import { Link, navigate, withQuery } from "../router";
import { ErrorNotice, Fields, FormEnd, Loading, Notice, PageHeader, Status, TableHead, TextField, Time, toast, useConfirm, useLoad } from "../ui";
import { assignableChannels } from "./templates";

type TemplateDetail = Schemas["TemplateDetail"];
type ParamSpec = Schemas["ParamSpec"];

/** The path parameter of a template's routes. */
const at = (id: string) => ({ params: { path: { id } } });

/**
 * A template's version: the one asked for, else the live one. A draft has
 * none live, so the newest is read first: it carries the whole release
 * state, which says whether a live one exists to read instead.
 */
async function loadTemplate(id: string, version: string): Promise<TemplateDetail> {
  const get = (v: string) => ok(api().GET("/v1/templates/{id}", { params: { path: { id }, query: { version: v } } }));
  if (version !== "") return get(version);
  const newest = await get("newest");
  return newest.stable == null || newest.stable === newest.version ? newest : get("stable");
}

export default function Template({ params, query, me }: PageProps) {
  const id = params.id ?? "";
  const version = query.get("version") ?? "";
  const t = useLoad(() => loadTemplate(id, version), [id, version]);
  const [dialog, ask] = useConfirm();
  const [busy, setBusy] = useState(false);
  const operator = allows(me.role, "operator");

  if (t.data === undefined) {
    return (
      <section>
        <PageHeader title="Template" sub={<span class="mono">{id}</span>} />
        {t.error !== undefined ? (
          <ErrorNotice error={t.error} retry={t.reload} />
        ) : (
          <Loading what="the template" />
        )}
      </section>
    );
  }
  const d = t.data;

  const act = async (what: string, f: () => Promise<string>) => {
    setBusy(true);
    try {
      toast(await f());
      t.reload();
    } catch (e) {
      toast(`${what}: ${describe(e)}`, "error");
    } finally {
      setBusy(false);
    }
  };

  const launch = (v: number) =>
    act("Launch", async () => {
      const r = await ok(api().POST("/v1/templates/{id}/launch", { ...at(id), body: { version: v } }));
      return r.already_launched ? `v${r.version} was already live.` : `v${r.version} is live${r.replaced ? ` (it replaced v${r.replaced})` : ""}.`;
    });

  const rollback = async () => {
    const yes = await ask({
      title: `Roll ${id} back?`,
      body: <p>v{d.previous} becomes live again in place of v{d.stable}; unpinned runs use it from now on.</p>,
      confirm: "Roll back",
    });
    if (yes) void act("Roll back", async () => `v${(await ok(api().POST("/v1/templates/{id}/rollback", at(id)))).version} is live again.`);
  };

  /** Deprecates or revives the template, or one version of it. */
  const deprecate = async (undo: boolean, v?: number) => {
    const what = v === undefined ? id : `v${v} of ${id}`;
    const body = v === undefined ? {} : { version: v };
    if (undo) {
      void act("Revive", async () => {
        await ok(api().POST("/v1/templates/{id}/deprecate", { ...at(id), body: { ...body, undo: true } }));
        return `${what} is no longer deprecated.`;
      });
      return;
    }
    let reason = "";
    const yes = await ask({
      title: `Deprecate ${what}?`,
      body: (
        <>
          <p>
            Runs keep working, but every trigger is told it is retired
            {v === undefined ? ", and the template cannot be launched until revived" : ""}.
          </p>
          <div class="field">
            <label for="dep-reason">Reason (shown to those who trigger it)</label>
            <input id="dep-reason" onInput={(e) => (reason = e.currentTarget.value)} />
          </div>
        </>
      ),
      confirm: "Deprecate",
      danger: true,
    });
    if (yes)
      void act("Deprecate", async () => {
        await ok(api().POST("/v1/templates/{id}/deprecate", { ...at(id), body: reason.trim() ? { ...body, reason: reason.trim() } : body }));
        return `${what} is deprecated.`;
      });
  };

  const remove = async (v?: number) => {
    const yes = await ask({
      title: v === undefined ? `Delete ${id}?` : `Delete v${v} of ${id}?`,
      body: (
        <p>
          {v === undefined ? "Every version, channel and launch record of the template goes." : "The version, the channels that point at it and its launch records go."}{" "}
          Runs it produced stay.
        </p>
      ),
      confirm: "Delete",
      danger: true,
    });
    if (!yes) return;
    setBusy(true);
    try {
      await ok(api().DELETE("/v1/templates/{id}", { params: { path: { id }, query: v === undefined ? {} : { version: String(v) } } }));
      toast(v === undefined ? `${id} deleted.` : `v${v} deleted.`);
      if (v === undefined || d.versions.length === 1) navigate("/templates");
      else navigate(`/templates/${encodeURIComponent(id)}`);
    } catch (e) {
      toast(describe(e), "error");
    } finally {
      setBusy(false);
    }
  };

  const versionDeprecation = (v: number) => d.version_deprecations.find((x) => x.version === v);
  const channelsOf = (v: number) => [
    ...(d.stable === v ? ["stable"] : []),
    ...(d.previous === v ? ["previous"] : []),
    ...(d.newest === v ? ["newest"] : []),
    ...Object.entries(d.tags)
      .filter(([, x]) => x === v)
      .map(([c]) => c),
  ];

  return (
    <section>
      <PageHeader
        title={
          <>
            <span class="mono">{d.id}</span> <Status value={d.status} />
          </>
        }
        sub={d.description ?? d.name ?? undefined}
      >
        {operator && d.previous != null && (
          <button type="button" disabled={busy} onClick={() => void rollback()}>
            Roll back to v{d.previous}
          </button>
        )}
        {operator && (
          <button type="button" disabled={busy} onClick={() => void deprecate(d.status === "deprecated")}>
            {d.status === "deprecated" ? "Revive" : "Deprecate"}
          </button>
        )}
        {operator && (
          <button type="button" class="danger" disabled={busy} onClick={() => void remove()}>
            Delete template
          </button>
        )}
      </PageHeader>
      {dialog}
      {t.error !== undefined && <ErrorNotice error={t.error} retry={t.reload} />}
      {d.deprecation && (
        <Notice kind="warn">
          Deprecated <Time iso={d.deprecation.deprecated_at} />
          {d.deprecation.deprecated_by ? ` by ${d.deprecation.deprecated_by}` : ""}
          {d.deprecation.reason ? `: ${d.deprecation.reason}` : "."}
        </Notice>
      )}
      {d.stable == null && <Notice>This template is a draft: no version is launched, so a run must name its version.</Notice>}
      <Fields
        items={[
          ["Live (stable)", d.stable != null ? `v${d.stable}` : null],
          ["Previous", d.previous != null ? `v${d.previous}` : null],
          ["Newest", d.newest != null ? `v${d.newest}` : null],
          ["Channels", Object.keys(d.tags).length === 0 ? null : Object.entries(d.tags).map(([c, v]) => `${c} → v${v}`).join(", ")],
        ]}
      />

      <h2>Versions</h2>
      <table class="table">
        <TableHead caption="Versions" cols={["Version", "Channels", "Deprecated", "Actions"]} />
        <tbody>
          {d.versions.map((v) => (
            <tr key={v} class={v === d.version ? "current" : ""}>
              <td>
                <Link href={withQuery(`/templates/${encodeURIComponent(id)}`, { version: String(v) })} aria-current={v === d.version ? "true" : undefined}>
                  v{v}
                </Link>
                {v === d.version && <span class="muted small"> (shown below)</span>}
              </td>
              <td>{channelsOf(v).join(", ") || <span class="muted">—</span>}</td>
              <td>
                {(() => {
                  const dep = versionDeprecation(v);
                  if (!dep) return <span class="muted">—</span>;
                  return (
                    <>
                      <Time iso={dep.deprecated_at} />
                      {dep.deprecated_by ? ` by ${dep.deprecated_by}` : ""}
                      {dep.reason ? `: ${dep.reason}` : ""}
                    </>
                  );
                })()}
              </td>
              <td class="row-actions">
                {operator && d.stable !== v && d.status !== "deprecated" && (
                  <button type="button" disabled={busy} onClick={() => void launch(v)}>
                    Launch v{v}
                  </button>
                )}
                {operator && (
                  <button type="button" disabled={busy} onClick={() => void deprecate(versionDeprecation(v) !== undefined, v)}>
                    {versionDeprecation(v) ? `Revive v${v}` : `Deprecate v${v}`}
                  </button>
                )}
                {operator && (
                  <button type="button" disabled={busy} onClick={() => void remove(v)}>
                    Delete v{v}
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {operator && <Promote id={id} versions={d.versions} onDone={t.reload} />}

      <h2>Run it</h2>
      {operator ? <Trigger d={d} /> : <p class="muted">Your role ({me.role}) may not trigger runs.</p>}

      <h2>Launch log</h2>
      {d.launches.length === 0 ? (
        <p class="muted">Nothing launched yet.</p>
      ) : (
        <table class="table">
          <TableHead caption="Launch log" cols={[["#", "num"], "Version", "Launched", "By"]} />
          <tbody>
            {d.launches.map((l) => (
              <tr key={l.seq}>
                <td class="num">{l.seq}</td>
                <td>v{l.version}</td>
                <td>
                  <Time iso={l.launched_at} />
                </td>
                <td>{l.launched_by ?? <span class="muted">—</span>}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}

      <h2>
        Config of v{d.version} ({d.format})
      </h2>
      <ParamsTable params={d.params} />
      <pre class="code" tabIndex={0}>{d.body}</pre>
    </section>
  );
}

function Promote({ id, versions, onDone }: { id: string; versions: number[]; onDone: () => void }) {
  const [tag, setTag] = useState<string>(assignableChannels[0]);
  const [version, setVersion] = useState(String(versions[0] ?? ""));
  const [busy, setBusy] = useState(false);
  return (
    <form
      class="inline-form"
      aria-label="Point a channel at a version"
      onSubmit={async (e) => {
        e.preventDefault();
        setBusy(true);
        try {
          const r = await ok(
            api().POST("/v1/templates/{id}/tags", { ...at(id), body: { tag: tag as Schemas["VersionChannel"], version: Number(version) } }),
          );
          toast(`${r.tag} now points at v${r.version}.`);
          onDone();
        } catch (err) {
          toast(describe(err), "error");
        } finally {
          setBusy(false);
        }
      }}
    >
      <label for="p-tag">Point channel</label>
      <select id="p-tag" value={tag} onChange={(e) => setTag(e.currentTarget.value)}>
        {assignableChannels.map((c) => (
          <option key={c} value={c}>
            {c}
          </option>
        ))}
      </select>
      <label for="p-version">at</label>
      <select id="p-version" value={version} onChange={(e) => setVersion(e.currentTarget.value)}>
        {versions.map((v) => (
          <option key={v} value={String(v)}>
            v{v}
          </option>
        ))}
      </select>
      <button type="submit" disabled={busy}>
        Point it
      </button>
    </form>
  );
}

function ParamsTable({ params }: { params: Record<string, ParamSpec> }) {
  const entries = Object.entries(params);
  if (entries.length === 0) return <p class="muted">No params.</p>;
  return (
    <table class="table">
      <TableHead caption="Params" cols={["Param", "Type", "Required", "Default", "Description"]} />
      <tbody>
        {entries.map(([name, p]) => (
          <tr key={name}>
            <td class="mono">
              {name}
              {p.secret && <span class="badge badge-secret">secret</span>}
            </td>
            <td>{p.type ?? "string"}</td>
            <td>{p.required ? "yes" : "no"}</td>
            <td class="mono">{p.default === undefined ? "—" : JSON.stringify(p.default)}</td>
            <td>{p.description ?? ""}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The trigger form: a typed input per declared param, and the run's options. */
function Trigger({ d }: { d: TemplateDetail }) {
  const params = Object.entries(d.params);
  const [values, setValues] = useState<Record<string, string>>({});
  const [pin, setPin] = useState<string>(d.stable != null ? "" : String(d.version));
  const [name, setName] = useState("");
  const [key, setKey] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);

  const typed = (p: ParamSpec, raw: string): unknown => {
    switch (p.type) {
      case "int":
      case "float":
        return Number(raw);
      case "bool":
        return raw === "true";
      default:
        return raw;
    }
  };

  const input = (n: string, p: ParamSpec): ComponentChildren => {
    const common = { id: `tp-${n}`, "aria-describedby": p.description ? `tp-${n}-help` : undefined };
    const v = values[n] ?? "";
    const set = (x: string) => setValues({ ...values, [n]: x });
    switch (p.type) {
      case "bool":
        return (
          <select {...common} value={v} onChange={(e) => set(e.currentTarget.value)}>
            <option value="">{p.default !== undefined ? `(default: ${String(p.default)})` : "(not set)"}</option>
            <option value="true">true</option>
            <option value="false">false</option>
          </select>
        );
      case "int":
      case "float":
        return (
          <input
            {...common}
            type="number"
            step={p.type === "int" ? 1 : "any"}
            required={p.required}
            placeholder={p.default !== undefined ? String(p.default) : ""}
            value={v}
            onInput={(e) => set(e.currentTarget.value)}
          />
        );
      default: {
        const text = {
          ...common,
          autocomplete: "off",
          required: p.required,
          placeholder: p.default !== undefined ? String(p.default) : "",
          value: v,
          onInput: (e: { currentTarget: HTMLInputElement }) => set(e.currentTarget.value),
        };
        // A secret param is typed unseen.
        return p.secret ? <input type="password" {...text} /> : <input type="text" {...text} />;
      }
    }
  };

  return (
    <form
      class="card trigger"
      aria-label="Trigger a run"
      onSubmit={async (e) => {
        e.preventDefault();
        setBusy(true);
        setError(null);
        const body: Schemas["TriggerTemplateRequest"] = { params: {} };
        for (const [n, p] of params) {
          const raw = values[n] ?? "";
          if (raw !== "" && body.params) body.params[n] = typed(p, raw);
        }
        if (pin !== "") body.version = /^\d+$/.test(pin) ? Number(pin) : pin;
        if (name.trim()) body.name = name.trim();
        if (key.trim()) body.idempotency_key = key.trim();
        try {
          const r = await ok(api().POST("/v1/templates/{id}/runs", { ...at(d.id), body }));
          toast(
            r.replayed
              ? "This idempotency key was used before: showing that run."
              : `Run of ${r.template_id} v${r.template_version} submitted.`,
          );
          for (const w of r.warnings ?? []) toast(w);
          navigate(`/runs/${encodeURIComponent(r.run_id)}`);
        } catch (err) {
          setError(describe(err));
          setBusy(false);
        }
      }}
    >
      {params.map(([n, p]) => (
        <div class="field" key={n}>
          <label for={`tp-${n}`}>
            <code>{n}</code> {p.required && <span class="badge">required</span>}
            <span class="badge badge-type">{p.type ?? "string"}</span>
          </label>
          {input(n, p)}
          {p.description && (
            <p id={`tp-${n}-help`} class="help">
              {p.description}
            </p>
          )}
        </div>
      ))}
      <div class="row">
        <div class="field">
          <label for="tp-version">Version</label>
          <select id="tp-version" value={pin} onChange={(e) => setPin(e.currentTarget.value)}>
            {d.stable != null && <option value="">stable (v{d.stable})</option>}
            {d.previous != null && <option value="previous">previous (v{d.previous})</option>}
            {Object.entries(d.tags).map(([c, v]) => (
              <option key={c} value={c}>
                {c} (v{v})
              </option>
            ))}
            {d.versions.map((v) => (
              <option key={v} value={String(v)}>
                v{v}
              </option>
            ))}
          </select>
        </div>
        <TextField id="tp-name" label="Run name" value={name} onValue={setName} />
        <TextField id="tp-key" label="Idempotency key" value={key} onValue={setKey} />
      </div>
      <FormEnd error={error} busy={busy} label="Trigger a run" busyLabel="Submitting…" />
    </form>
  );
}
