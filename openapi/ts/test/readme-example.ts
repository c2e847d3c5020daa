// README example start
import { readFile } from "node:fs/promises";
import { createFaucetClient, followLogs, waitForRun } from "@faucet-dev/faucet-client";
const faucet = createFaucetClient({ baseUrl: "http://127.0.0.1:8080", token: process.env.FAUCET_TOKEN });
const body = { config: await readFile("hello.yaml", "utf8"), idempotency_key: "hello-1" };
const { data, error } = await faucet.POST("/v1/runs", { body });
if (error) throw new Error(`${error.error.code}: ${error.detail}`);
for await (const ev of followLogs(faucet, data.run_id)) {
  if (ev.event === "log") console.log(ev.data.ts, ev.data.level, ev.data.line);
}
console.log((await waitForRun(faucet, data.run_id)).status, data.replayed ? "(replayed)" : "");
// README example end
//
// This is the README's example, compiled with the tests (never run by them)
// so that it stays true.
