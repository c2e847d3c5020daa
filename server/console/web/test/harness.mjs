// What the console's browser suite and its benchmark share: Debian's
// Chromium driven by playwright-core with a fresh profile, the server they
// drive (FAUCET_URL, FAUCET_TOKEN), and the API called directly for setup.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

export const base = need("FAUCET_URL");
export const token = need("FAUCET_TOKEN");

/** The value of the environment variable name, which the Go test sets. */
export function need(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set: the Go test that starts the server sets it`);
  return v;
}

/** The switches every launch passes: no sandbox (root), no GPU, and no network traffic of the browser's own. */
export const chromiumArgs = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

/** Starts Chromium with a new, empty profile; close() removes it. */
export async function launch(options = {}) {
  const profile = mkdtempSync(join(tmpdir(), "faucet-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.FAUCET_CHROMIUM ?? "/usr/bin/chromium",
    headless: true,
    args: chromiumArgs,
    viewport: { width: 1280, height: 860 },
    colorScheme: "light",
    ...options,
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/** Calls the API with the token; the parsed body, or throws on an error answer. */
export async function api(method, path, body) {
  const headers = { Authorization: `Bearer ${token}`, Accept: "application/json" };
  const init = { method, headers };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const r = await fetch(base + path, init);
  const text = await r.text();
  if (!r.ok) throw new Error(`${method} ${path}: ${r.status} ${text}`);
  return text === "" ? undefined : JSON.parse(text);
}
