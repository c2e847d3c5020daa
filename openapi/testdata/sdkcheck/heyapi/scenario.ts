// The SDK scenario (see openapi/sdk_test.go) with a client @hey-api/openapi-ts
// generated from openapi/openapi.yaml into ./gen, compiled with tsc --strict.
import assert from "node:assert/strict";

import { createClient, createConfig } from "./gen/client/index.js";
import {
  cancelRun,
  followRunLogs,
  getRun,
  listRuns,
  streamRunLogs,
  submitRun,
  whoami,
} from "./gen/sdk.gen.js";
import type { Client } from "./gen/client/index.js";
import type { RunRecord, SubmitRequest, SubmitResponse } from "./gen/types.gen.js";

function env(name: string): string {
  const v = process.env[name];
  if (v === undefined || v === "") {
    throw new Error(`${name} is not set: run this through openapi/sdk_test.go`);
  }
  return v;
}

const scenario = env("FAUCET_SCENARIO");
const token = env("FAUCET_TOKEN");
const client = createClient(createConfig({ baseUrl: env("FAUCET_URL"), auth: () => token }));

async function submit(body: SubmitRequest): Promise<SubmitResponse> {
  const res = await submitRun({ client, body });
  assert.equal(res.response.status, 202, JSON.stringify(res.error));
  assert.ok(res.data !== undefined);
  return res.data;
}

async function wait(id: string): Promise<RunRecord> {
  for (let i = 0; i < 1200; i++) {
    const res = await getRun({ client, path: { id } });
    assert.ok(res.data !== undefined, `get ${id}: ${res.response.status}`);
    if (res.data.status === "completed" || res.data.status === "failed" || res.data.status === "cancelled") {
      return res.data;
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`run ${id} did not finish within a minute`);
}

async function main(): Promise<void> {
  // Submit with a key, replay, conflict.
  const body: SubmitRequest = { config: env("FAUCET_CONFIG"), name: scenario, idempotency_key: `${scenario}-key`, labels: { scenario } };
  const first = await submit(body);
  assert.equal(first.replayed, false);
  const again = await submit(body);
  assert.equal(again.run_id, first.run_id);
  assert.equal(again.replayed, true);
  const conflict = await submitRun({ client, body: { ...body, labels: { scenario, changed: "yes" } } });
  assert.equal(conflict.response.status, 409);
  assert.equal(conflict.error?.error.code, "conflict");

  const done = await wait(first.run_id);
  assert.equal(done.status, "completed");
  assert.ok(done.records_written > 0);
  assert.equal(done.attempt, 0);

  // Cancel a held run; cancelling it again is a no-op.
  const held = await submit({ config: env("FAUCET_HOLD_CONFIG"), name: scenario });
  assert.equal((await cancelRun({ client, path: { id: held.run_id } })).response.status, 202);
  assert.equal((await wait(held.run_id)).status, "cancelled");
  assert.equal((await cancelRun({ client, path: { id: held.run_id } })).response.status, 200);

  // Paginate one run a page.
  const ids: string[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 10; i++) {
    const page = await listRuns({ client, query: { name: scenario, limit: 1, ...(cursor === undefined ? {} : { cursor }) } });
    assert.ok(page.data !== undefined, `list: ${page.response.status}`);
    ids.push(...page.data.runs.map((r) => r.run_id));
    if (page.data.next_cursor === null) {
      break;
    }
    cursor = page.data.next_cursor;
  }
  assert.deepEqual(ids, [held.run_id, first.run_id]);
  const bad = await listRuns({ client, query: { cursor: "no-such-run" } });
  assert.equal(bad.response.status, 400);
  assert.equal(bad.error?.error.code, "bad_config");

  // Logs: the JSON page, then the generated SSE helper.
  const logs = await streamRunLogs({ client, path: { id: first.run_id }, query: { format: "json" } });
  assert.ok(logs.data !== undefined, `logs: ${logs.response.status}`);
  const last = logs.data.lines.at(-1);
  assert.equal(last?.line, "run completed");
  assert.equal(logs.data.next_after, last.seq);
  const events: { event: string | undefined; id: string | undefined }[] = [];
  const { stream } = await followRunLogs({
    client,
    path: { id: first.run_id },
    sseMaxRetryAttempts: 1,
    onSseEvent: (ev) => events.push({ event: ev.event, id: ev.id }),
  });
  for await (const data of stream) {
    assert.ok(data !== undefined);
  }
  assert.equal(events.at(-1)?.event, "end");
  const logEvents = events.filter((ev) => ev.event === "log");
  assert.equal(logEvents.length, logs.data.lines.length);
  assert.equal(logEvents.at(-1)?.id, String(last.seq));

  // Typed 404 and 401.
  const missing = await getRun({ client, path: { id: "no-such-run" } });
  assert.equal(missing.response.status, 404);
  assert.equal(missing.error?.error.code, "not_found");
  const stranger: Client = createClient(createConfig({ baseUrl: env("FAUCET_URL"), auth: () => "not-a-token" }));
  const denied = await whoami({ client: stranger });
  assert.equal(denied.response.status, 401);
  assert.equal(denied.error?.error.code, "unauthorized");
  assert.match(denied.response.headers.get("WWW-Authenticate") ?? "", /^Bearer /);
  const me = await whoami({ client });
  assert.equal(me.data?.role, "admin");

  // A --no-auth server takes calls without a token.
  const open: Client = createClient(createConfig({ baseUrl: env("FAUCET_NOAUTH_URL") }));
  const anon = await whoami({ client: open });
  assert.equal(anon.data?.auth_enabled, false);
  const list = await listRuns({ client: open, query: { limit: 1 } });
  assert.ok(list.data !== undefined, `tokenless list: ${list.response.status}`);
}

main().then(
  () => console.log("heyapi scenario: passed"),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);
