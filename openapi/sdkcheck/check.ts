// Compiled with tsc --strict against the types openapi-typescript generates
// from openapi/openapi.yaml. Every line uses a part of the API a client
// needs; @ts-expect-error lines prove the types are precise, not `any`.
import type { components, operations, paths } from "./schema";

type Schemas = components["schemas"];

type SubmitBody = paths["/v1/runs"]["post"]["requestBody"]["content"]["application/json"];
type Accepted = paths["/v1/runs"]["post"]["responses"]["202"]["content"]["application/json"];
type QueueFull = paths["/v1/runs"]["post"]["responses"]["429"]["content"]["application/problem+json"];
type Page = operations["listRuns"]["responses"]["200"]["content"]["application/json"];
type ListQuery = NonNullable<operations["listRuns"]["parameters"]["query"]>;

export const submit: SubmitBody = {
  config: "version: 1\n",
  config_format: "yaml",
  idempotency_key: "nightly-2026-01-31",
  labels: { team: "data" },
  timeout_secs: 600,
  doctor_first: true,
};

// @ts-expect-error config is required
export const missingConfig: SubmitBody = { name: "x" };

// @ts-expect-error config_format is an enum
export const badFormat: SubmitBody = { config: "", config_format: "toml" };

export function runID(a: Accepted): string {
  return a.run_id;
}

export function retryCode(p: QueueFull): string {
  return p.error.code + " " + p.detail + " " + String(p.status);
}

export function terminal(r: Schemas["RunRecord"]): boolean {
  return r.status === "completed" || r.status === "failed" || r.status === "cancelled";
}

// @ts-expect-error status is an enum
export const bogus: Schemas["RunRecord"]["status"] = "done";

export function written(p: Page): number {
  let n = 0;
  for (const r of p.runs) {
    n += r.records_written;
    for (const inv of r.invocations) {
      n += inv.error === null ? 0 : 1;
    }
  }
  return n + (p.next_cursor === null || p.next_cursor === undefined ? 0 : 1);
}

export const query: ListQuery = { status: ["running", "queued"], limit: 100 };

export function audited(e: Schemas["AuditEntry"]): string {
  return `${e.principal} (${e.role}) ${e.action} ${e.result}`;
}

export function ready(r: Schemas["ReadyStatus"]): boolean {
  return r.status === "ready" && r.history_ok && r.queue_ok && !r.cluster.enabled;
}
