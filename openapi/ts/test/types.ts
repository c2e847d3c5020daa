// Compiled (never run for its values) with the package's tests: each
// expected error proves a generated type is precise, not any, and the plain
// lines that optional request fields stay optional.
import type { components, operations, paths } from "@faucet-dev/faucet-client";

type Schemas = components["schemas"];

type SubmitBody = paths["/v1/runs"]["post"]["requestBody"]["content"]["application/json"];
type QueueFull = paths["/v1/runs"]["post"]["responses"]["429"]["content"]["application/problem+json"];
type Page = operations["listRuns"]["responses"]["200"]["content"]["application/json"];
type ListQuery = NonNullable<operations["listRuns"]["parameters"]["query"]>;

// Only config is required: config_format and callback.method have defaults
// the server applies, so a client may leave them out.
export const minimal: SubmitBody = { config: "version: 1\n" };
export const withCallback: SubmitBody = { config: "version: 1\n", callback: { url: "https://example.com/hook" } };

// @ts-expect-error config is required
export const missingConfig: SubmitBody = { name: "x" };

// @ts-expect-error config_format is an enum
export const badFormat: SubmitBody = { config: "", config_format: "toml" };

// @ts-expect-error request bodies are closed: a misspelt field does not compile
export const misspelt: SubmitBody = { config: "", idempotencyKey: "k" };

// @ts-expect-error response schemas are closed too
export const extra: Schemas["SubmitResponse"] = { run_id: "r", status: "queued", submitted_at: "", replayed: false, bogus: 1 };

// @ts-expect-error status is an enum
export const bogus: Schemas["RunRecord"]["status"] = "done";

// @ts-expect-error the error code is an enum
export const code: Schemas["ErrorCode"] = "oops";

export function retry(p: QueueFull): string {
  return p.error.code + " " + p.detail + " " + String(p.status);
}

export function written(p: Page): number {
  let n = 0;
  for (const r of p.runs) {
    n += r.records_written + r.attempt;
    for (const inv of r.invocations) {
      n += inv.error === null ? 0 : 1;
    }
  }
  return n + (p.next_cursor === null ? 0 : 1);
}

export const query: ListQuery = { status: ["running", "queued"], limit: 100 };

export function audited(e: Schemas["AuditEntry"]): string {
  return `${e.principal} (${e.role}) ${e.action} ${e.result}`;
}

export function ready(r: Schemas["ReadyStatus"]): boolean {
  return r.status === "ready" && r.history_ok && r.queue_ok && !r.cluster.enabled;
}
