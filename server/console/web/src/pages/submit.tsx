// Submit a run: a YAML editor whose config the doctor validates (each
// problem marked at its line), then the submit itself, with an optional
// idempotency key.
import { useRef, useState } from "preact/hooks";
import { allows, api, describe, FaucetError, type DoctorReport as Report } from "../api";
import type { PageProps } from "../lazy";
import { DoctorReport, reportIn } from "../parts/doctor";
import { Editor, problemsOf, type EditorHandle, type Problem } from "../parts/editor";
import { Link, navigate } from "../router";
import { Notice, PageHeader, TextField, toast } from "../ui";

const starter = `version: 1
name: hello
pipeline:
  source:
    type: generate
    config: {count: 1000}
  sink:
    type: jsonl
    config: {path: out/hello.jsonl}
`;

/** The editor's text, kept while the console is open. */
let draft = starter;

/** Opens the submit page with text in its editor. */
export function openInSubmit(text: string): void {
  draft = text;
  navigate("/submit");
}

type Outcome =
  | { kind: "none" }
  | { kind: "problems"; problems: Problem[]; during: "validate" | "submit" }
  | { kind: "report"; report: Report; during: "validate" | "submit" }
  | { kind: "error"; message: string };

export default function Submit({ me }: PageProps) {
  const editor = useRef<EditorHandle>(null);
  const [name, setName] = useState("");
  const [key, setKey] = useState("");
  const [labels, setLabels] = useState("");
  const [timeout, setTimeoutSecs] = useState("");
  const [doctorFirst, setDoctorFirst] = useState(false);
  const [busy, setBusy] = useState<"validate" | "submit" | null>(null);
  const [outcome, setOutcome] = useState<Outcome>({ kind: "none" });
  const operator = allows(me.role, "operator");

  const show = (e: unknown, during: "validate" | "submit") => {
    if (e instanceof FaucetError && e.problem) {
      const { code, details } = e.problem.error;
      if (code === "bad_config") {
        const problems = problemsOf(details, e.problem.detail);
        editor.current?.mark(problems);
        setOutcome({ kind: "problems", problems, during });
        return;
      }
      const report = reportIn(details);
      if (code === "unprocessable" && report) {
        editor.current?.mark([]);
        setOutcome({ kind: "report", report, during });
        return;
      }
    }
    setOutcome({ kind: "error", message: describe(e) });
  };

  const validate = async () => {
    setBusy("validate");
    try {
      const { data, error, response } = await api().POST("/v1/doctor", {
        body: { config: editor.current?.value() ?? "", config_format: "yaml" },
      });
      if (!response.ok || !data) throw new FaucetError(response.status, error as never, response.statusText);
      editor.current?.mark([]);
      setOutcome({ kind: "report", report: data, during: "validate" });
    } catch (e) {
      show(e, "validate");
    } finally {
      setBusy(null);
    }
  };

  const labelsOf = (): Record<string, string> | string => {
    const out: Record<string, string> = {};
    for (const raw of labels.split("\n")) {
      const line = raw.trim();
      if (line === "") continue;
      const eq = line.indexOf("=");
      if (eq <= 0) return `label "${line}" is not key=value`;
      out[line.slice(0, eq).trim()] = line.slice(eq + 1).trim();
    }
    return out;
  };

  const submit = async () => {
    const l = labelsOf();
    if (typeof l === "string") {
      setOutcome({ kind: "error", message: l });
      return;
    }
    setBusy("submit");
    try {
      const { data, error, response } = await api().POST("/v1/runs", {
        body: {
          config: editor.current?.value() ?? "",
          config_format: "yaml",
          ...(name.trim() ? { name: name.trim() } : {}),
          ...(key.trim() ? { idempotency_key: key.trim() } : {}),
          ...(Object.keys(l).length > 0 ? { labels: l } : {}),
          ...(timeout.trim() ? { timeout_secs: Number(timeout) } : {}),
          ...(doctorFirst ? { doctor_first: true } : {}),
        },
      });
      if (!response.ok || !data) throw new FaucetError(response.status, error as never, response.statusText);
      toast(data.replayed ? "This idempotency key was used before: showing that run." : "Run submitted.");
      for (const w of data.warnings ?? []) toast(w);
      navigate(`/runs/${encodeURIComponent(data.run_id)}`);
    } catch (e) {
      show(e, "submit");
    } finally {
      setBusy(null);
    }
  };

  return (
    <section>
      <PageHeader
        title="Submit a run"
        sub={
          <>
            Write a pipeline config, validate it (the doctor probes every connector), then submit it. The{" "}
            <Link href="/connectors">connectors</Link> page shows each connector's settings.
          </>
        }
      />
      {!operator && <Notice kind="warn">Your role ({me.role}) may read runs but not validate or submit them.</Notice>}
      <div class="submit">
        <div class="submit-editor">
          <p id="editor-label" class="label">
            Pipeline config (YAML)
          </p>
          <Editor
            initial={draft}
            label="Pipeline config (YAML)"
            handle={editor}
            onChange={(t) => {
              draft = t;
            }}
            minLines={20}
          />
        </div>
        <form
          class="submit-options"
          onSubmit={(e) => {
            e.preventDefault();
            void submit();
          }}
        >
          <TextField id="s-name" label="Run name" placeholder="the config's name" value={name} onValue={setName} />
          <div class="field">
            <label for="s-key">Idempotency key</label>
            <div class="with-button">
              <input id="s-key" value={key} aria-describedby="s-key-help" onInput={(e) => setKey(e.currentTarget.value)} />
              <button type="button" onClick={() => setKey(crypto.randomUUID())}>
                New key
              </button>
            </div>
            <p id="s-key-help" class="help">
              Submitting the same key again returns the first run instead of starting another.
            </p>
          </div>
          <div class="field">
            <label for="s-labels">Labels</label>
            <textarea
              id="s-labels"
              rows={3}
              value={labels}
              aria-describedby="s-labels-help"
              onInput={(e) => setLabels(e.currentTarget.value)}
            />
            <p id="s-labels-help" class="help">
              One key=value a line.
            </p>
          </div>
          <div class="field">
            <label for="s-timeout">Timeout (seconds)</label>
            <input
              id="s-timeout"
              type="number"
              min={1}
              value={timeout}
              onInput={(e) => setTimeoutSecs(e.currentTarget.value)}
            />
          </div>
          <label class="check">
            <input type="checkbox" checked={doctorFirst} onChange={(e) => setDoctorFirst(e.currentTarget.checked)} />
            Probe the connectors before the run starts
          </label>
          <div class="form-actions">
            <button type="button" disabled={!operator || busy !== null} onClick={() => void validate()}>
              {busy === "validate" ? "Validating…" : "Validate"}
            </button>
            <button type="submit" class="primary" disabled={!operator || busy !== null}>
              {busy === "submit" ? "Submitting…" : "Submit run"}
            </button>
          </div>
        </form>
      </div>
      <div class="outcome" aria-live="polite">
        {outcome.kind === "problems" && (
          <div class="notice notice-error" role="alert">
            <h2>
              {outcome.problems.length} problem{outcome.problems.length === 1 ? "" : "s"} in the config
            </h2>
            <ul class="problems">
              {outcome.problems.map((p, i) => (
                <li key={i}>
                  {p.line !== undefined ? (
                    <button type="button" class="link" onClick={() => editor.current?.reveal(p.line ?? 1, p.column)}>
                      Line {p.line}, column {p.column ?? 1}
                    </button>
                  ) : (
                    <span class="muted">No line</span>
                  )}{" "}
                  {p.path && <code>{p.path}</code>} {p.message}
                </li>
              ))}
            </ul>
          </div>
        )}
        {outcome.kind === "report" && (
          <>
            <h2>Doctor report</h2>
            <DoctorReport report={outcome.report} />
          </>
        )}
        {outcome.kind === "error" && (
          <div class="notice notice-error" role="alert">
            <p>{outcome.message}</p>
          </div>
        )}
      </div>
    </section>
  );
}
