// The SDK scenario (see openapi/sdk_test.go) with this package's client,
// against the live servers the Go test starts and names in the environment.
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  createFaucetClient,
  faucetError,
  FaucetError,
  followLogs,
  isTerminal,
  waitForRun,
  type FaucetClient,
  type LogEvent,
  type RunRecord,
  type SubmitRequest,
} from "@faucet-dev/faucet-client";

function env(name: string): string {
  const v = process.env[name];
  if (v === undefined || v === "") {
    throw new Error(`${name} is not set: run this through openapi/sdk_test.go`);
  }
  return v;
}

const scenario = env("FAUCET_SCENARIO");
const token = env("FAUCET_TOKEN");
const config = env("FAUCET_CONFIG");
const holdConfig = env("FAUCET_HOLD_CONFIG");
const client = createFaucetClient({ baseUrl: env("FAUCET_URL"), token });

async function submit(c: FaucetClient, body: SubmitRequest) {
  const { data, error, response } = await c.POST("/v1/runs", { body });
  if (data === undefined) {
    throw faucetError(response, error);
  }
  assert.equal(response.status, 202);
  return data;
}

test("submit with a key, replay, conflict, poll", async () => {
  const body: SubmitRequest = { config, name: scenario, idempotency_key: `${scenario}-key`, labels: { scenario } };
  const first = await submit(client, body);
  assert.equal(first.replayed, false);
  const again = await submit(client, body);
  assert.equal(again.run_id, first.run_id);
  assert.equal(again.replayed, true);

  const conflict = await client.POST("/v1/runs", { body: { ...body, labels: { scenario, changed: "yes" } } });
  assert.equal(conflict.response.status, 409);
  assert.equal(conflict.error?.error.code, "conflict");

  const done = await waitForRun(client, first.run_id, { intervalMs: 50 });
  assert.equal(done.status, "completed");
  assert.ok(done.records_written > 0);
  assert.equal(done.attempt, 0);
  assert.equal(done.idempotency_key, `${scenario}-key`);
});

test("cancel, paginate, logs", async () => {
  const held = await submit(client, { config: holdConfig, name: scenario });
  const cancel = await client.POST("/v1/runs/{id}/cancel", { params: { path: { id: held.run_id } } });
  assert.equal(cancel.response.status, 202);
  const cancelled = await waitForRun(client, held.run_id, { intervalMs: 50 });
  assert.equal(cancelled.status, "cancelled");
  const again = await client.POST("/v1/runs/{id}/cancel", { params: { path: { id: held.run_id } } });
  assert.equal(again.response.status, 200);

  // One run a page, newest first, following next_cursor.
  const seen: RunRecord[] = [];
  let cursor: string | undefined;
  for (;;) {
    const { data, error, response } = await client.GET("/v1/runs", {
      params: { query: { name: scenario, limit: 1, ...(cursor === undefined ? {} : { cursor }) } },
    });
    if (data === undefined) {
      throw faucetError(response, error);
    }
    assert.ok(data.runs.length <= 1);
    seen.push(...data.runs);
    if (data.next_cursor === null) {
      break;
    }
    cursor = data.next_cursor;
  }
  assert.equal(seen.length, 2);
  assert.equal(seen[0]?.run_id, held.run_id);
  assert.ok(seen.every((r) => isTerminal(r.status)));
  const done = seen[1];
  assert.ok(done !== undefined && done.status === "completed");

  const bad = await client.GET("/v1/runs", { params: { query: { cursor: "no-such-run" } } });
  assert.equal(bad.response.status, 400);
  assert.equal(bad.error?.error.code, "bad_config");

  const page = await client.GET("/v1/runs/{id}/logs", { params: { path: { id: done.run_id }, query: { format: "json" } } });
  if (page.data === undefined) {
    throw faucetError(page.response, page.error);
  }
  const last = page.data.lines.at(-1);
  assert.equal(last?.line, "run completed");
  assert.equal(page.data.next_after, last.seq);
  assert.equal(page.data.truncated, false);

  const events: LogEvent[] = [];
  for await (const ev of followLogs(client, done.run_id)) {
    events.push(ev);
  }
  const end = events.at(-1);
  assert.ok(end?.event === "end");
  assert.equal(end.data.status, "completed");
  const lines = events.flatMap((ev) => (ev.event === "log" ? [ev.data] : []));
  assert.deepEqual(lines, page.data.lines);

  // Resuming after the last line but one yields that line and the end.
  const tail: LogEvent[] = [];
  for await (const ev of followLogs(client, done.run_id, { after: last.seq - 1 })) {
    tail.push(ev);
  }
  assert.deepEqual(tail.map((ev) => ev.event), ["log", "end"]);
});

test("typed 404 and 401", async () => {
  const missing = await client.GET("/v1/runs/{id}", { params: { path: { id: "no-such-run" } } });
  assert.equal(missing.response.status, 404);
  assert.equal(missing.error?.error.code, "not_found");
  await assert.rejects(waitForRun(client, "no-such-run"), (e: unknown) => e instanceof FaucetError && e.status === 404 && e.code === "not_found");

  const stranger = createFaucetClient({ baseUrl: env("FAUCET_URL"), token: "not-a-token" });
  const who = await stranger.GET("/v1/whoami");
  assert.equal(who.response.status, 401);
  assert.equal(who.error?.error.code, "unauthorized");
  assert.match(who.response.headers.get("WWW-Authenticate") ?? "", /^Bearer /);

  const mine = await client.GET("/v1/whoami");
  assert.equal(mine.data?.role, "admin");
  assert.equal(mine.data?.auth_enabled, true);
});

test("a --no-auth server takes calls without a token", async () => {
  const open = createFaucetClient({ baseUrl: env("FAUCET_NOAUTH_URL") });
  const who = await open.GET("/v1/whoami");
  assert.equal(who.data?.auth_enabled, false);
  const list = await open.GET("/v1/runs", { params: { query: { limit: 1 } } });
  assert.ok(list.data !== undefined, `list: ${list.response.status}`);
  const ready = await open.GET("/readyz");
  assert.equal(ready.data?.status, "ready");
});
