// The connectors this server runs, and each one's config JSON Schema as a
// form: every setting with its type, whether it is required or secret, its
// default and its description. What is filled in becomes a config snippet
// that can start a pipeline in the editor.
import type { ComponentChildren } from "preact";
import { useState } from "preact/hooks";
import { api, ok } from "../api";
import type { PageProps } from "../lazy";
import { Link } from "../router";
import { ErrorNotice, Loading, Notice, PageHeader, useLoad } from "../ui";
import { openInSubmit } from "./submit";

/** The part of JSON Schema the form reads. */
interface Schema {
  type?: string | string[];
  title?: string;
  description?: string;
  default?: unknown;
  examples?: unknown[];
  enum?: unknown[];
  const?: unknown;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  pattern?: string;
  format?: string;
  writeOnly?: boolean;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  oneOf?: Schema[];
  anyOf?: Schema[];
  additionalProperties?: boolean | Schema;
}

const kinds = [
  ["sources", "source"],
  ["sinks", "sink"],
  ["transforms", "transform"],
] as const;

export default function Connectors({ params }: PageProps) {
  const list = useLoad(() => ok(api().GET("/v1/schemas")), []);
  const kind = params.kind;
  const name = params.name;
  return (
    <section>
      <PageHeader title="Connectors" sub="What this server can read from and write to, and every setting each one takes." />
      {list.error !== undefined && <ErrorNotice error={list.error} retry={list.reload} />}
      {list.data === undefined && list.loading && <Loading what="connectors" />}
      {list.data && (
        <div class="split">
          <nav class="catalog" aria-label="Connectors">
            {kinds.map(([group, k]) => {
              const items = list.data?.[group] ?? [];
              if (items.length === 0) return null;
              return (
                <div key={group}>
                  <h2>{group[0]?.toUpperCase() + group.slice(1)}</h2>
                  <ul>
                    {items.map((c) => (
                      <li key={c.name}>
                        <Link
                          href={`/connectors/${k}/${encodeURIComponent(c.name)}`}
                          aria-current={kind === k && name === c.name ? "page" : undefined}
                        >
                          {c.name}
                        </Link>
                        {c.description && <span class="muted small"> {c.description}</span>}
                      </li>
                    ))}
                  </ul>
                </div>
              );
            })}
          </nav>
          <div class="connector">
            {kind && name ? (
              <Connector key={`${kind}/${name}`} kind={kind} name={name} />
            ) : (
              <p class="muted">Choose a connector to see its settings.</p>
            )}
          </div>
        </div>
      )}
    </section>
  );
}

function Connector({ kind, name }: { kind: string; name: string }) {
  const schema = useLoad(
    () => ok(api().GET("/v1/schemas/{kind}/{name}", { params: { path: { kind: kind as "source", name } } })) as Promise<Schema>,
    [kind, name],
  );
  const [values, setValues] = useState<Record<string, unknown>>({});
  if (schema.error !== undefined) return <ErrorNotice error={schema.error} retry={schema.reload} />;
  if (!schema.data) return <Loading what={`the ${name} ${kind}'s schema`} />;
  const s = schema.data;
  const snippet = yamlOf({ type: name, config: values }, 2);
  return (
    <article>
      <h2>
        {name} <span class="muted">({kind})</span>
      </h2>
      {s.description && <p>{s.description}</p>}
      <Alternatives s={s} />
      <form class="schema-form" aria-label={`Settings of the ${name} ${kind}`} onSubmit={(e) => e.preventDefault()}>
        <ObjectFields schema={s} value={values} onChange={setValues} path={`${kind}-${name}`} />
      </form>
      {kind !== "transform" && (
        <>
          <h3>As config</h3>
          <pre class="code" tabIndex={0} aria-label="Config snippet">{`${kind}:\n${snippet}`}</pre>
          <button type="button" class="primary" onClick={() => openInSubmit(starterWith(kind, name, values))}>
            Start a pipeline with this {kind}
          </button>
        </>
      )}
      <details>
        <summary>JSON Schema</summary>
        <pre class="code" tabIndex={0}>{JSON.stringify(s, null, 2)}</pre>
      </details>
    </article>
  );
}

function Alternatives({ s }: { s: Schema }) {
  const alts = s.oneOf ?? s.anyOf;
  if (!alts) return null;
  const sets = alts.map((a) => (a.required ?? []).join(" + ")).filter((x) => x !== "");
  if (sets.length === 0) return null;
  return (
    <Notice>
      Set {s.oneOf ? "exactly one" : "at least one"} of: {sets.join(", ")}.
    </Notice>
  );
}

function ObjectFields({
  schema,
  value,
  onChange,
  path,
}: {
  schema: Schema;
  value: Record<string, unknown>;
  onChange: (v: Record<string, unknown>) => void;
  path: string;
}) {
  const props = Object.entries(schema.properties ?? {});
  if (props.length === 0) return <p class="muted">No settings.</p>;
  const required = new Set(schema.required ?? []);
  const set = (k: string, v: unknown) => {
    const next = { ...value };
    if (v === undefined || v === "") delete next[k];
    else next[k] = v;
    onChange(next);
  };
  // Required settings first, then the rest, each group by name.
  props.sort(([a], [b]) => Number(required.has(b)) - Number(required.has(a)) || a.localeCompare(b));
  return (
    <>
      {props.map(([k, p]) => (
        <Field key={k} name={k} schema={p} required={required.has(k)} value={value[k]} onChange={(v) => set(k, v)} id={`${path}-${k}`} />
      ))}
    </>
  );
}

function typeOf(s: Schema): string {
  if (s.enum) return "enum";
  const t = Array.isArray(s.type) ? s.type.find((x) => x !== "null") : s.type;
  if (t) return t;
  if (s.properties) return "object";
  return "any";
}

function Field({
  name,
  schema,
  required,
  value,
  onChange,
  id,
}: {
  name: string;
  schema: Schema;
  required: boolean;
  value: unknown;
  onChange: (v: unknown) => void;
  id: string;
}) {
  const t = typeOf(schema);
  const help = `${id}-help`;
  const badges: ComponentChildren = (
    <>
      {required && <span class="badge">required</span>}
      {schema.writeOnly && <span class="badge badge-secret">secret</span>}
      <span class="badge badge-type">{t === "enum" ? "one of" : t}</span>
    </>
  );
  const describe = (
    <div id={help} class="help">
      {schema.title && <p>{schema.title}</p>}
      {schema.description && <p>{schema.description}</p>}
      {schema.default !== undefined && (
        <p>
          Default: <code>{JSON.stringify(schema.default)}</code>
        </p>
      )}
      {schema.examples && schema.examples.length > 0 && (
        <p>
          Example: <code>{schema.examples.map((e) => JSON.stringify(e)).join(", ")}</code>
        </p>
      )}
    </div>
  );

  if (t === "object" && schema.properties) {
    return (
      <fieldset class="nested">
        <legend>
          {name} {badges}
        </legend>
        {describe}
        <ObjectFields
          schema={schema}
          value={(value as Record<string, unknown>) ?? {}}
          onChange={(v) => onChange(Object.keys(v).length === 0 ? undefined : v)}
          path={id}
        />
      </fieldset>
    );
  }

  let input: ComponentChildren;
  switch (t) {
    case "enum":
      input = (
        <select id={id} aria-describedby={help} value={value === undefined ? "" : JSON.stringify(value)} onChange={(e) => onChange(e.currentTarget.value === "" ? undefined : JSON.parse(e.currentTarget.value))}>
          <option value="">{schema.default !== undefined ? `(default: ${String(schema.default)})` : "(not set)"}</option>
          {(schema.enum ?? []).map((v) => (
            <option key={JSON.stringify(v)} value={JSON.stringify(v)}>
              {String(v)}
            </option>
          ))}
        </select>
      );
      break;
    case "boolean":
      input = (
        <select id={id} aria-describedby={help} value={value === undefined ? "" : String(value)} onChange={(e) => onChange(e.currentTarget.value === "" ? undefined : e.currentTarget.value === "true")}>
          <option value="">{schema.default !== undefined ? `(default: ${String(schema.default)})` : "(not set)"}</option>
          <option value="true">true</option>
          <option value="false">false</option>
        </select>
      );
      break;
    case "integer":
    case "number":
      input = (
        <input
          id={id}
          type="number"
          aria-describedby={help}
          step={t === "integer" ? 1 : "any"}
          min={schema.minimum}
          max={schema.maximum}
          placeholder={schema.default !== undefined ? String(schema.default) : ""}
          value={value === undefined ? "" : String(value)}
          onInput={(e) => onChange(e.currentTarget.value === "" ? undefined : Number(e.currentTarget.value))}
        />
      );
      break;
    case "string": {
      const text = {
        id,
        autocomplete: "off",
        "aria-describedby": help,
        pattern: schema.pattern,
        placeholder: schema.examples?.[0] !== undefined ? String(schema.examples[0]) : "",
        value: typeof value === "string" ? value : "",
        onInput: (e: { currentTarget: HTMLInputElement }) => onChange(e.currentTarget.value),
      };
      // A secret setting is typed unseen.
      input = schema.writeOnly ? <input type="password" {...text} /> : <input type="text" {...text} />;
      break;
    }
    case "array":
      input = (
        <textarea
          id={id}
          rows={3}
          aria-describedby={help}
          placeholder="one value a line"
          value={Array.isArray(value) ? value.map(String).join("\n") : ""}
          onInput={(e) => {
            const items = e.currentTarget.value.split("\n").filter((x) => x.trim() !== "");
            const num = schema.items?.type === "integer" || schema.items?.type === "number";
            onChange(items.length === 0 ? undefined : items.map((x) => (num ? Number(x) : x)));
          }}
        />
      );
      break;
    default:
      input = <JSONInput id={id} help={help} value={value} onChange={onChange} />;
  }
  return (
    <div class="field schema-field">
      <label for={id}>
        <code>{name}</code> {badges}
      </label>
      {input}
      {describe}
    </div>
  );
}

function JSONInput({ id, help, value, onChange }: { id: string; help: string; value: unknown; onChange: (v: unknown) => void }) {
  const [text, setText] = useState(value === undefined ? "" : JSON.stringify(value));
  const [bad, setBad] = useState(false);
  return (
    <>
      <textarea
        id={id}
        rows={2}
        aria-describedby={help}
        aria-invalid={bad}
        placeholder="a JSON value"
        value={text}
        onInput={(e) => {
          const t = e.currentTarget.value;
          setText(t);
          if (t.trim() === "") {
            setBad(false);
            onChange(undefined);
            return;
          }
          try {
            onChange(JSON.parse(t));
            setBad(false);
          } catch {
            setBad(true);
          }
        }}
      />
      {bad && <p class="field-error">Not valid JSON.</p>}
    </>
  );
}

/** A YAML block for a JSON value, indented by indent spaces. */
function yamlOf(v: unknown, indent: number): string {
  const pad = " ".repeat(indent);
  if (v === null || typeof v !== "object") return `${pad}${scalar(v)}\n`;
  if (Array.isArray(v)) {
    if (v.length === 0) return `${pad}[]\n`;
    return v.map((x) => (x !== null && typeof x === "object" ? `${pad}-\n${yamlOf(x, indent + 2)}` : `${pad}- ${scalar(x)}\n`)).join("");
  }
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length === 0) return `${pad}{}\n`;
  return entries
    .map(([k, x]) => {
      const key = /^[A-Za-z_][\w-]*$/.test(k) ? k : JSON.stringify(k);
      if (x !== null && typeof x === "object" && (Array.isArray(x) ? x.length > 0 : Object.keys(x).length > 0)) {
        return `${pad}${key}:\n${yamlOf(x, indent + 2)}`;
      }
      return `${pad}${key}: ${x !== null && typeof x === "object" ? (Array.isArray(x) ? "[]" : "{}") : scalar(x)}\n`;
    })
    .join("");
}

function scalar(v: unknown): string {
  if (typeof v === "string") return JSON.stringify(v);
  if (v === undefined) return "null";
  return JSON.stringify(v);
}

/** A whole pipeline around one connector, with a simple other end. */
function starterWith(kind: string, name: string, values: Record<string, unknown>): string {
  const self = `  ${kind}:\n${yamlOf({ type: name, config: values }, 4)}`;
  const other =
    kind === "source"
      ? `  sink:\n${yamlOf({ type: "jsonl", config: { path: `out/${name}.jsonl` } }, 4)}`
      : `  source:\n${yamlOf({ type: "generate", config: { count: 100 } }, 4)}`;
  return `version: 1\nname: ${name}-${kind}\npipeline:\n${kind === "source" ? self + other : other + self}`;
}
