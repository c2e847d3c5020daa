// The README's example, compiled with the tests so it stays true; the lines
// between the markers are the README's.
import { readFile } from "node:fs/promises";

import { createFaucetClient, followLogs, waitForRun } from "@faucet-dev/faucet-client";

export async function example(): Promise<void> {
  // README example start
  const faucet = createFaucetClient({ baseUrl: "http://127.0.0.1:8080", token: process.env.FAUCET_TOKEN });
  const config = await readFile("hello.yaml", "utf8");
  const { data, error } = await faucet.POST("/v1/runs", { body: { config, idempotency_key: "hello-1" } });
  if (error) throw new Error(`${error.error.code}: ${error.detail}`);
  for await (const ev of followLogs(faucet, data.run_id)) {
    if (ev.event === "log") console.log(ev.data.ts, ev.data.level, ev.data.line);
  }
  const run = await waitForRun(faucet, data.run_id);
  console.log(run.status, run.records_written, data.replayed ? "(an earlier submit's run)" : "");
  // README example end
}
