// The template registry: every template with its release state, and a form
// to register a new version.
import { useRef, useState } from "preact/hooks";
import { allows, api, describe, ok, type Schemas } from "../api";
import type { PageProps } from "../lazy";
import { Editor, type EditorHandle } from "../parts/editor";
import { Link, navigate } from "../router";
import { ErrorNotice, FormEnd, Loading, PageHeader, Status, TableHead, TextField, Time, toast, useLoad } from "../ui";

/**
 * The channels a person points at a version; stable, previous and newest
 * follow launches and rollbacks instead.
 */
export const assignableChannels = ["dev", "test", "staging", "pre-prod", "canary", "prod"] as const satisfies readonly Schemas["VersionChannel"][];

const example = `version: 1
name: export-orders
params:
  rows: {type: int, default: 100, description: How many rows to generate}
  path: {type: string, required: true}
pipeline:
  source: {type: generate, config: {count: "\${param.rows}"}}
  sink: {type: jsonl, config: {path: "\${param.path}"}}
`;

export default function Templates({ me }: PageProps) {
  const list = useLoad(() => ok(api().GET("/v1/templates")), []);
  const [registering, setRegistering] = useState(false);
  const operator = allows(me.role, "operator");
  return (
    <section>
      <PageHeader title="Templates" sub="Versioned, parameterised pipelines: launch a version to make it the one unpinned runs use.">
        {operator && (
          <button type="button" class="primary" aria-expanded={registering} onClick={() => setRegistering(!registering)}>
            {registering ? "Close the form" : "Register a template"}
          </button>
        )}
      </PageHeader>
      {registering && <Register onDone={(id) => navigate(`/templates/${encodeURIComponent(id)}`)} />}
      {list.error !== undefined && <ErrorNotice error={list.error} retry={list.reload} />}
      {list.data === undefined && list.loading && <Loading what="templates" />}
      {list.data && list.data.templates.length === 0 && <p class="empty">No template registered yet.</p>}
      {list.data && list.data.templates.length > 0 && (
        <table class="table">
          <TableHead caption="Templates" cols={["Template", "Status", ["Live", "num"], ["Newest", "num"], "Channels", "Params", "Registered"]} />
          <tbody>
            {list.data.templates.map((t) => (
              <tr key={t.id}>
                <td>
                  <Link href={`/templates/${encodeURIComponent(t.id)}`} class="mono">
                    {t.id}
                  </Link>
                  {t.description && <div class="muted small">{t.description}</div>}
                </td>
                <td>
                  <Status value={t.state?.status ?? "draft"} />
                </td>
                <td class="num">{t.state?.stable != null ? `v${t.state.stable}` : "—"}</td>
                <td class="num">v{t.state?.newest ?? t.version}</td>
                <td>
                  {Object.entries(t.state?.tags ?? {})
                    .map(([c, v]) => `${c} → v${v}`)
                    .join(", ") || <span class="muted">—</span>}
                </td>
                <td>{Object.keys(t.params).join(", ") || <span class="muted">none</span>}</td>
                <td>
                  <Time iso={t.created_at} />
                  {t.created_by && <span class="muted small"> by {t.created_by}</span>}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function Register({ onDone }: { onDone: (id: string) => void }) {
  const editor = useRef<EditorHandle>(null);
  const [id, setId] = useState("");
  const [description, setDescription] = useState("");
  const [launch, setLaunch] = useState(false);
  const [tags, setTags] = useState<string[]>([]);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  return (
    <form
      class="card register"
      aria-label="Register a template"
      onSubmit={async (e) => {
        e.preventDefault();
        setBusy(true);
        setError(null);
        try {
          const body: Schemas["RegisterTemplateRequest"] = { config: editor.current?.value() ?? "", config_format: "yaml" };
          if (id.trim()) body.id = id.trim();
          if (description.trim()) body.description = description.trim();
          if (launch) body.launch = true;
          if (tags.length > 0) body.tags = tags as Schemas["VersionChannel"][];
          const t = await ok(api().POST("/v1/templates", { body }));
          toast(`Registered ${t.id} v${t.version}.`);
          onDone(t.id);
        } catch (err) {
          setError(describe(err));
        } finally {
          setBusy(false);
        }
      }}
    >
      <h2>Register a template</h2>
      <p class="help">
        A template is a pipeline config with a <code>params:</code> block; <code>{"${param.NAME}"}</code> takes a param's value.
        Registering adds a version and moves no caller until a version is launched.
      </p>
      <Editor initial={example} label="Template config (YAML)" handle={editor} minLines={12} />
      <div class="row">
        <TextField id="t-id" label="Id" placeholder="the config's name" value={id} onValue={setId} />
        <TextField id="t-desc" label="Description" grow value={description} onValue={setDescription} />
      </div>
      <fieldset class="statuses">
        <legend>Point these channels at the new version</legend>
        {assignableChannels.map((c) => (
          <label key={c} class="check">
            <input
              type="checkbox"
              checked={tags.includes(c)}
              onChange={() => setTags(tags.includes(c) ? tags.filter((x) => x !== c) : [...tags, c])}
            />
            {c}
          </label>
        ))}
      </fieldset>
      <label class="check">
        <input type="checkbox" checked={launch} onChange={(e) => setLaunch(e.currentTarget.checked)} />
        Launch it now (unpinned runs use it at once)
      </label>
      <FormEnd error={error} busy={busy} label="Register" busyLabel="Registering…" />
    </form>
  );
}
