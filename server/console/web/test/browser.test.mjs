// The console in a real browser against a real faucet serve (started by the
// Go test TestConsoleInABrowser, which sets FAUCET_URL, FAUCET_TOKEN,
// FAUCET_SHOTS and FAUCET_WORK). One browser, one page, the steps in order,
// as a person would take them: sign in, submit a pipeline and watch it
// finish, read its logs, cancel a long run, look at the connectors and the
// cluster, browse a dataset and its lineage, and launch a template. Each
// page is screenshotted (and the picture checked for a real render) and checked
// by axe-core; throughout, no CSP violation, uncaught error, foreign request
// or token in a URL may happen.
import assert from "node:assert/strict";
import { mkdirSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { api, base, launch, need, token } from "./harness.mjs";

const shots = process.env.FAUCET_SHOTS ?? "screenshots";
const work = process.env.FAUCET_WORK ?? "/tmp";
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");
const viewerToken = need("FAUCET_VIEWER_TOKEN");
const noAuthBase = need("FAUCET_NOAUTH_URL");
const origins = new Set([base, noAuthBase].map((u) => new URL(u).origin));

let browser;
let page;
const cspViolations = [];
const pageErrors = [];
const consoleErrors = [];
const refused = [];
const foreign = [];
const leaks = [];
const audited = [];

before(async () => {
  mkdirSync(shots, { recursive: true });
  browser = await launch();
  const { context } = browser;
  // Reported from inside the page: CSP refusals (the policy must never have
  // to refuse the console's own code).
  await context.exposeBinding("__faucetCSP", (_source, v) => cspViolations.push(v));
  await context.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (e) =>
      window.__faucetCSP(`${e.violatedDirective} blocked ${e.blockedURI || "inline"} at ${e.sourceFile}:${e.lineNumber}`),
    );
  });
  page = context.pages()[0] ?? (await context.newPage());
  // Generous: the suite shares the machine with the rest of the test command.
  page.setDefaultTimeout(60_000);
  page.on("pageerror", (e) => pageErrors.push(e.message));
  page.on("console", (m) => {
    // A refused request is logged too; those are checked one by one below.
    if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) consoleErrors.push(m.text());
  });
  page.on("response", (r) => {
    if (r.status() >= 400) refused.push(`${r.status()} ${r.request().method()} ${new URL(r.url()).pathname}`);
  });
  page.on("request", (r) => {
    const u = r.url();
    if (!u.startsWith("data:") && !origins.has(new URL(u).origin)) foreign.push(u);
    if (u.includes(token) || (viewerToken && u.includes(viewerToken))) leaks.push(u);
  });
});

after(async () => {
  await browser?.close();
});

/** Saves a full-page screenshot and checks that it shows something. */
async function shoot(name) {
  const file = join(shots, `${name}.png`);
  const png = await page.screenshot({ path: file, fullPage: true });
  const colours = await distinctColours(png);
  assert.ok(colours >= 16, `${file} has ${colours} colour(s): the page did not render`);
  return file;
}

/** How many colours a PNG shows, counted by a blank page of the same browser. */
async function distinctColours(png) {
  const blank = await browser.context.newPage();
  try {
    return await blank.evaluate(async (b64) => {
      const img = new Image();
      img.src = `data:image/png;base64,${b64}`;
      await img.decode();
      const c = document.createElement("canvas");
      c.width = img.width;
      c.height = img.height;
      const g = c.getContext("2d");
      g.drawImage(img, 0, 0);
      const d = g.getImageData(0, 0, c.width, c.height).data;
      const seen = new Set();
      for (let i = 0; i < d.length; i += 4) seen.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
      return seen.size;
    }, png.toString("base64"));
  } finally {
    await blank.close();
  }
}

/** Runs axe-core on the page: WCAG 2.1 A and AA and axe's best practices. */
async function accessible(name) {
  await page.evaluate(axeSource);
  const result = await page.evaluate(() =>
    window.axe.run(document, {
      runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] },
      resultTypes: ["violations"],
    }),
  );
  audited.push(name);
  const found = result.violations.map(
    (v) => `${v.id} (${v.impact}): ${v.help}\n    ${v.nodes.map((n) => n.target.join(" ")).slice(0, 5).join("\n    ")}`,
  );
  assert.deepEqual(found, [], `axe-core on the ${name} page:\n  ${found.join("\n  ")}`);
}

/** Both checks of a page, once it shows what it should. */
async function check(name) {
  await accessible(name);
  await shoot(name);
}

/** The run id of the run page the browser shows. */
function runIdOfPage() {
  const m = /\/runs\/([^/?#]+)$/.exec(new URL(page.url()).pathname);
  assert.ok(m, `not a run page: ${page.url()}`);
  return decodeURIComponent(m[1]);
}

/** Replaces the text of the CodeMirror editor on the page. */
async function typeInEditor(text, which = 0) {
  const content = page.locator(".cm-content").nth(which);
  await content.click();
  await page.keyboard.press("Control+A");
  await page.keyboard.press("Delete");
  await page.keyboard.insertText(text);
}

const hostileName = `hello <img src=x onerror="window.__pwned=1"> <b>bold</b>`;
const jsonlSink = (file) => `{type: jsonl, config: {path: ${JSON.stringify(join(work, file))}}}`;
const config = (source) => `version: 1
name: browser-hello
pipeline:
  source: {type: ${source}, config: {count: 2500}}
  sink: ${jsonlSink("hello.jsonl")}
`;
const holding = `version: 1
name: browser-hold
pipeline:
  source: {type: gate, config: {rows: 3, hold: true}}
  sink: ${jsonlSink("hold.jsonl")}
`;
const failingRead = `version: 1
name: browser-fail
pipeline:
  source: {type: gate, config: {rows: 3, fail_read: true}}
  sink: ${jsonlSink("fail.jsonl")}
`;
const sharded = `version: 1
name: browser-sharded
shard: {count: 2}
pipeline:
  source: {type: generate, config: {count: 20000}}
  sink: {type: sqlite, config: {path: ${JSON.stringify(join(work, "sharded.db"))}, table: rows}}
`;

let completedRun;
let heldRun;

test("the shell and its assets are public, strict, and deep links get it; the API's 404 stays JSON", async () => {
  const shell = await fetch(`${base}/`);
  assert.equal(shell.status, 200);
  assert.match(shell.headers.get("content-type"), /^text\/html/);
  const csp = shell.headers.get("content-security-policy");
  assert.match(csp, /script-src 'self'(;|$)/);
  assert.match(csp, /connect-src 'self'/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
  const html = await shell.text();
  const nonce = /'nonce-([^']+)'/.exec(csp)?.[1];
  assert.ok(nonce && html.includes(`content="${nonce}"`), "the shell carries its response's style nonce");
  assert.doesNotMatch(html, /<script(?![^>]*\bsrc=)/, "the shell has no inline script");
  const asset = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
  const js = await fetch(base + asset);
  assert.equal(js.status, 200);
  assert.match(js.headers.get("content-type"), /javascript/);

  const deep = await fetch(`${base}/runs/some-run`, { headers: { Accept: "text/html,application/xhtml+xml" } });
  assert.equal(deep.status, 200);
  assert.match(deep.headers.get("content-type"), /^text\/html/);

  const missing = await fetch(`${base}/no/such/thing`, { headers: { Accept: "application/json" } });
  assert.equal(missing.status, 404);
  assert.equal((await missing.json()).error.code, "not_found");
  const apiMissing = await fetch(`${base}/v1/no-such-route`, { headers: { Accept: "text/html" } });
  assert.equal(apiMissing.status, 404, "a path under /v1/ never gets the shell");
  assert.match(apiMissing.headers.get("content-type"), /json/);

  const gated = await fetch(`${base}/v1/runs`);
  assert.equal(gated.status, 401, "the data stays behind the token");
});

test("signing in: a wrong token is refused, the right one is kept in session storage only", async () => {
  await page.goto(`${base}/runs`);
  await page.getByLabel("API token").waitFor();
  await check("sign-in");
  await page.getByLabel("API token").fill("not-the-token");
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("alert").filter({ hasText: /token/i }).waitFor();
  await page.getByLabel("API token").fill(token);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { level: 1, name: "Runs" }).waitFor();
  const storage = await page.evaluate(() => ({
    session: sessionStorage.getItem("faucet.console.token"),
    local: localStorage.length,
  }));
  assert.equal(storage.session, token);
  assert.equal(storage.local, 0, "nothing in local storage");
  assert.ok(!page.url().includes(token));
});

test("submit: the doctor marks each problem at its line, then the run completes and its logs show", async () => {
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Submit" }).click();
  await page.getByRole("heading", { level: 1, name: "Submit a run" }).waitFor();
  await typeInEditor(config("generat"));
  await page.getByRole("button", { name: "Validate" }).click();
  const problems = page.getByRole("alert").filter({ hasText: "problem" });
  await problems.waitFor();
  await problems.getByRole("button", { name: /^Line 4, column \d+$/ }).waitFor();
  assert.match(await problems.innerText(), /unknown source connector "generat"; did you mean "generate"/);
  await page.locator(".cm-lintRange-error").first().waitFor();
  await check("submit-problems");

  await typeInEditor(config("generate"));
  await page.getByRole("button", { name: "Validate" }).click();
  await page.getByText("Every probe passed.").waitFor();
  assert.equal(await page.locator(".cm-lintRange-error").count(), 0, "the marks go once the config is fixed");

  await page.getByLabel("Run name").fill(hostileName);
  await page.getByLabel("Idempotency key").fill(`browser-${Date.now()}`);
  await page.getByLabel("Labels").fill("suite=browser\nstep=submit");
  await page.getByLabel("Probe the connectors before the run starts").check();
  await check("submit");
  await page.getByRole("button", { name: "Submit run" }).click();
  await page.waitForURL(/\/runs\/[^/]+$/);
  completedRun = runIdOfPage();
  const status = page.locator(".page-header .status");
  await status.filter({ hasText: "completed" }).waitFor();
  await page.getByText("2,500").first().waitFor();
  // Submitted with doctor_first: the run carries its doctor report.
  await page.getByRole("heading", { name: "Doctor report" }).waitFor();
  await page.getByRole("table", { name: "Doctor probes" }).getByText("passed").first().waitFor();

  // Whatever a server string holds, it is text.
  await page.getByRole("heading", { level: 1 }).filter({ hasText: hostileName }).waitFor();
  assert.equal(await page.locator("main img").count(), 0);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);

  // The live stream ended with the run; a reload reads the persisted lines.
  const lines = page.getByRole("list", { name: "Log lines" }).locator("li:not(.muted)");
  await lines.first().waitFor();
  await page.reload();
  await page.getByText(/persisted line\(s\)/).waitFor();
  await lines.first().waitFor();
  assert.ok((await lines.count()) > 0);
  await check("run");
});

test("runs: the list shows a new run's status live, filters by status, and pages", async () => {
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Runs" }).click();
  await page.getByRole("heading", { level: 1, name: "Runs" }).waitFor();
  await page.locator(`tr[data-run="${completedRun}"]`).waitFor();
  // Submitted behind the page's back: they appear, run and end without a reload.
  heldRun = (await api("POST", "/v1/runs", { config: holding, name: "browser-hold" })).run_id;
  const failing = (await api("POST", "/v1/runs", { config: failingRead, name: "browser-fail" })).run_id;
  await page.locator(`tr[data-run="${heldRun}"] .status`).filter({ hasText: "running" }).waitFor();
  await page.locator(`tr[data-run="${failing}"] .status`).filter({ hasText: "failed" }).waitFor();
  await check("runs");
  // The README shows the runs page as the suite sees it here.
  if (process.env.FAUCET_README_SHOT) await page.screenshot({ path: process.env.FAUCET_README_SHOT });

  await page.getByRole("checkbox", { name: "running" }).check();
  await page.getByRole("button", { name: "Apply" }).click();
  await page.waitForURL(/status=running/);
  await page.locator(`tr[data-run="${completedRun}"]`).waitFor({ state: "detached" });
  const statuses = await page.locator("table.runs tbody .status").allInnerTexts();
  assert.ok(statuses.length >= 1 && statuses.every((s) => s === "running"), `statuses ${statuses}`);
  await page.getByRole("link", { name: "Clear" }).click();

  for (const n of [1, 2, 3]) await api("POST", "/v1/runs", { config: config("generate"), name: `browser-page-${n}` });
  await page.goto(`${base}/runs?limit=2`);
  const rows = page.locator("table.runs tbody tr");
  await rows.nth(1).waitFor();
  const first = await rows.evaluateAll((rs) => rs.map((r) => r.dataset.run));
  assert.equal(first.length, 2);
  await page.getByRole("link", { name: "Older →" }).click();
  await page.waitForURL(/cursor=/);
  await page.locator(`tr[data-run="${first[0]}"]`).waitFor({ state: "detached" });
  const second = await rows.evaluateAll((rs) => rs.map((r) => r.dataset.run));
  assert.equal(second.length, 2);
  assert.ok(!second.some((id) => first.includes(id)), "the next page has other runs");
  await page.getByRole("link", { name: "← Newer" }).click();
  await page.locator(`tr[data-run="${first[0]}"]`).waitFor();
});

test("cluster: the member lists its slots and the held run; a sharded run shows its shards", async () => {
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Cluster" }).click();
  await page.getByRole("heading", { level: 1, name: "Cluster" }).waitFor();
  const members = page.getByRole("table", { name: "Members" });
  await members.getByText("this server").waitFor();
  await members.getByRole("link", { name: "browser-hold" }).waitFor();
  await check("cluster");

  const id = (await api("POST", "/v1/runs", { config: sharded })).run_id;
  await page.goto(`${base}/runs/${id}`);
  await page.locator(".page-header .status").filter({ hasText: "completed" }).waitFor();
  const shards = page.getByRole("table", { name: "Shards" });
  await shards.locator("tbody tr").nth(1).waitFor();
  await shards.locator("tbody .status").filter({ hasText: "completed" }).nth(1).waitFor();
  await page.getByText("20,000").first().waitFor();
});

test("a run's callback: its delivery, retried after a 503, shows on the run page", async () => {
  const seen = [];
  const receiver = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      seen.push(req.headers["faucet-delivery-id"]);
      res.writeHead(seen.length === 1 ? 503 : 200).end();
    });
  });
  await new Promise((resolve) => receiver.listen(0, "127.0.0.1", resolve));
  try {
    const url = `http://127.0.0.1:${receiver.address().port}/hook`;
    const id = (await api("POST", "/v1/runs", { config: config("generate").replace("browser-hello", "browser-callback"), callback: { url } }))
      .run_id;
    await page.goto(`${base}/runs/${id}`);
    const row = page.getByRole("table", { name: "Callback deliveries" }).locator("tbody tr");
    await row.locator(".status").filter({ hasText: "delivered" }).waitFor();
    const cells = await row.locator("td").allInnerTexts();
    assert.equal(cells[2], "2", `attempts: ${cells}`);
    assert.equal(cells[4], "200", `last answer: ${cells}`);
    assert.equal(seen.length, 2, "the receiver was called twice");
    assert.ok(seen[0] && seen[0] === seen[1] && cells[0] === seen[0], `one delivery id throughout: ${seen}, ${cells[0]}`);
    await page.getByText(`POST ${url}`).waitFor();
    await check("run-callback");
  } finally {
    receiver.close();
  }
});

test("a long run: its logs follow live and pause; it is cancelled, then deleted, after a confirmation", async () => {
  await page.goto(`${base}/runs/${heldRun}`);
  await page.locator(".page-header .status").filter({ hasText: "running" }).waitFor();
  await page.getByText("Following the live tail").waitFor();
  await page.getByRole("list", { name: "Log lines" }).locator("li:not(.muted)").first().waitFor();
  await page.getByRole("button", { name: "Pause" }).click();
  await page.getByText(/Paused: \d+ new line\(s\) held back/).waitFor();
  await page.getByRole("button", { name: "Resume" }).click();
  await page.getByText("Following the live tail").waitFor();
  await check("run-live");

  await page.getByRole("button", { name: "Cancel run" }).click();
  const dialog = page.getByRole("dialog", { name: "Cancel this run?" });
  await dialog.waitFor();
  assert.ok(await dialog.evaluate((d) => d.contains(document.activeElement)), "focus moves into the dialog");
  await check("cancel-dialog");
  await page.keyboard.press("Escape");
  await dialog.waitFor({ state: "hidden" });
  assert.equal(await page.locator(".page-header .status").innerText(), "running", "Escape keeps the run");
  await page.getByRole("button", { name: "Cancel run" }).click();
  await dialog.getByRole("button", { name: "Cancel the run" }).click();
  await page.locator(".page-header .status").filter({ hasText: "cancelled" }).waitFor();
  await page.getByText("The run ended; its stream closed.").waitFor();

  await page.getByRole("button", { name: "Delete run" }).click();
  await page.getByRole("dialog", { name: "Delete this run?" }).getByRole("button", { name: "Delete the run" }).click();
  await page.waitForURL(/\/runs$/);
  await page.getByText("Run deleted.").waitFor();
  const gone = await fetch(`${base}/v1/runs/${heldRun}`, { headers: { Authorization: `Bearer ${token}` } });
  assert.equal(gone.status, 404);
});

test("connectors: a connector's config schema as a form that writes a config", async () => {
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Connectors" }).click();
  await page.getByRole("navigation", { name: "Connectors" }).getByRole("link", { name: "generate" }).click();
  await page.waitForURL(/\/connectors\/source\/generate$/);
  const count = page.getByLabel(/^count/);
  await count.fill("42");
  await page.getByLabel("Config snippet").filter({ hasText: "count: 42" }).waitFor();
  await check("connectors");
  await page.getByRole("button", { name: "Start a pipeline with this source" }).click();
  await page.waitForURL(/\/submit$/);
  await page.locator(".cm-content").filter({ hasText: "count: 42" }).waitFor();
});

test("datasets: search, a dataset's schema timeline and volume chart, and the lineage graph", async () => {
  // The catalog records a run after it finished, in the background: wait
  // until the first run's sink is in it.
  const hello = join(work, "hello.jsonl");
  for (;;) {
    const found = await api("GET", `/v1/catalog/datasets?q=${encodeURIComponent(hello)}`);
    if (found.datasets.length > 0) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Datasets" }).click();
  await page.getByRole("heading", { level: 1, name: "Datasets" }).waitFor();
  await page.getByLabel("URI contains").fill("hello.jsonl");
  await page.getByRole("button", { name: "Search" }).click();
  await page.waitForURL(/q=hello.jsonl/);
  const link = page.getByRole("table", { name: "Datasets" }).getByRole("link", { name: /hello\.jsonl/ });
  await link.first().waitFor();
  await check("datasets");
  await link.first().click();
  await page.waitForURL(/\/datasets\/[^/]+$/);
  const datasetPath = new URL(page.url()).pathname;
  await page.getByRole("heading", { name: "Schema timeline" }).waitFor();
  await page.locator(".timeline li").first().waitFor();
  await page.locator(".chart canvas").waitFor();
  // Its upstream is the generate source of the submitted runs.
  await page.getByRole("heading", { name: "Upstream" }).locator("..").getByRole("link", { name: /generate/ }).first().waitFor();
  await check("dataset");

  await page.getByRole("link", { name: "Show in the lineage graph" }).click();
  await page.waitForURL(/\/lineage\?root=/);
  const canvas = page.locator(".lineage-canvas");
  await canvas.locator("canvas").first().waitFor();
  const zoom = () => canvas.evaluate((el) => el.cy.zoom());
  const pan = () => canvas.evaluate((el) => el.cy.pan());
  const z0 = await zoom();
  await page.getByRole("button", { name: "Zoom in" }).click();
  assert.ok((await zoom()) > z0, "zoom in zooms");
  const p0 = await pan();
  const box = await canvas.boundingBox();
  await page.mouse.move(box.x + 10, box.y + 10);
  await page.mouse.down();
  await page.mouse.move(box.x + 90, box.y + 60, { steps: 8 });
  await page.mouse.up();
  const p1 = await pan();
  assert.ok(p1.x !== p0.x || p1.y !== p0.y, "dragging the background pans");
  await page.getByRole("button", { name: "Fit" }).click();
  await check("lineage");
  // Clicking a dataset opens it.
  const at = await canvas.evaluate((el) => {
    const n = el.cy.nodes().filter((x) => String(x.data("uri")).includes("hello.jsonl"))[0];
    const p = n.renderedPosition();
    return { x: p.x, y: p.y };
  });
  await page.mouse.click(box.x + at.x, box.y + at.y);
  await page.waitForURL((u) => u.pathname === datasetPath);
});

test("templates: register, launch, trigger with params, and roll back", async () => {
  const id = `browser-tpl-${Date.now()}`;
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Templates" }).click();
  await page.getByRole("heading", { level: 1, name: "Templates" }).waitFor();
  await page.getByRole("button", { name: "Register a template" }).click();
  await typeInEditor(`version: 1
name: ${id}
params:
  rows: {type: int, default: 10, description: How many rows}
  path: {type: string, required: true}
pipeline:
  source: {type: generate, config: {count: "\${param.rows}"}}
  sink: {type: jsonl, config: {path: "\${param.path}"}}
`);
  await page.getByLabel("Id").fill(id);
  await page.getByLabel("Description").fill("made by the browser suite");
  await check("templates");
  await page.getByRole("button", { name: "Register", exact: true }).click();
  await page.waitForURL(new RegExp(`/templates/${id}$`));
  await page.getByText("This template is a draft").waitFor();
  await page.getByRole("button", { name: "Launch v1" }).click();
  await page.locator(".page-header .status").filter({ hasText: "launched" }).waitFor();

  // A second version, launched, then rolled back to the first.
  await api("POST", "/v1/templates", {
    id,
    config: `version: 1\nname: ${id}\nparams:\n  rows: {type: int, default: 20}\n  path: {type: string, required: true}\npipeline:\n  source: {type: generate, config: {count: "\${param.rows}"}}\n  sink: {type: jsonl, config: {path: "\${param.path}"}}\n`,
  });
  await page.reload();
  await page.getByRole("button", { name: "Launch v2" }).click();
  await page.getByRole("button", { name: "Roll back to v1" }).waitFor();
  await check("template");
  await page.getByRole("button", { name: "Roll back to v1" }).click();
  await page.getByRole("dialog").getByRole("button", { name: "Roll back" }).click();
  await page.getByRole("button", { name: "Roll back to v2" }).waitFor();

  // A channel points at a version; a version is deprecated, with a reason.
  const versions = page.getByRole("table", { name: "Versions" });
  await page.getByLabel("Point channel").selectOption("prod");
  await page.getByLabel("at", { exact: true }).selectOption("1");
  await page.getByRole("button", { name: "Point it" }).click();
  await versions.getByRole("row", { name: /v1/ }).filter({ hasText: "prod" }).waitFor();
  await page.getByRole("button", { name: "Deprecate v2" }).click();
  const dialog = page.getByRole("dialog", { name: /Deprecate v2/ });
  await dialog.getByLabel(/Reason/).fill("superseded by v1");
  await dialog.getByRole("button", { name: "Deprecate" }).click();
  await versions.getByRole("row", { name: /v2/ }).filter({ hasText: "superseded by v1" }).waitFor();
  await page.getByRole("button", { name: "Revive v2" }).waitFor();
  assert.equal(await page.getByRole("table", { name: "Launch log" }).locator("tbody tr").count(), 3, "launch, launch, roll back");

  await page.getByLabel(/^rows/).fill("7");
  await page.getByLabel(/^path/).fill(join(work, "template.jsonl"));
  await page.getByRole("button", { name: "Trigger a run" }).click();
  await page.waitForURL(/\/runs\/[^/]+$/);
  await page.locator(".page-header .status").filter({ hasText: "completed" }).waitFor();
  await page.getByText("Records written").waitFor();
  assert.match(await page.locator(".fields").innerText(), /\b7\b/);
});

/** Signs in on the sign-in form with t. */
async function signIn(t) {
  await page.getByLabel("API token").fill(t);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("navigation", { name: "Console" }).waitFor();
}

test("a viewer reads but is offered no action; signing out forgets the token", async () => {
  await page.getByRole("button", { name: "Sign out" }).click();
  await page.getByLabel("API token").waitFor();
  assert.equal(await page.evaluate(() => sessionStorage.getItem("faucet.console.token")), null);
  await signIn(viewerToken);
  await page.getByText("vera").first().waitFor();
  await page.goto(`${base}/runs/${completedRun}`);
  await page.locator(".page-header .status").filter({ hasText: "completed" }).waitFor();
  assert.equal(await page.getByRole("button", { name: /Delete run|Cancel run/ }).count(), 0);
  await page.getByRole("navigation", { name: "Console" }).getByRole("link", { name: "Submit" }).click();
  await page.getByText("Your role (viewer) may read runs but not validate or submit them.").waitFor();
  assert.ok(await page.getByRole("button", { name: "Submit run" }).isDisabled());
  assert.ok(await page.getByRole("button", { name: "Validate" }).isDisabled());
  await check("submit-viewer");
  await page.getByRole("button", { name: "Sign out" }).click();
  await signIn(token);
});

test("a --no-auth server: the console opens without a sign-in", async () => {
  await page.goto(`${noAuthBase}/runs`);
  await page.getByRole("heading", { level: 1, name: "Runs" }).waitFor();
  await page.getByText("no auth", { exact: true }).waitFor();
  assert.equal(await page.getByLabel("API token").count(), 0);
  await check("runs-no-auth");
});

test("keyboard: a skip link first, then the navigation, each with a visible focus ring", async () => {
  await page.goto(`${base}/runs`);
  await page.getByRole("heading", { level: 1, name: "Runs" }).waitFor();
  await page.keyboard.press("Tab");
  const skip = await page.evaluate(() => {
    const el = document.activeElement;
    return { text: el?.textContent, top: el?.getBoundingClientRect().top ?? -1 };
  });
  assert.equal(skip.text, "Skip to content");
  assert.ok(skip.top >= 0, "the skip link shows when focused");
  await page.keyboard.press("Enter");
  assert.equal(await page.evaluate(() => document.activeElement?.id), "main");
  await page.keyboard.press("Shift+Tab");
  await page.keyboard.press("Shift+Tab");
  const focused = await page.evaluate(() => {
    const el = document.activeElement;
    const s = getComputedStyle(el);
    return { text: el?.textContent, outline: s.outlineStyle, width: s.outlineWidth };
  });
  assert.equal(focused.text, "Cluster", "the navigation is reachable by keyboard");
  assert.notEqual(focused.outline, "none");
  assert.notEqual(focused.width, "0px");

  await shoot("runs-keyboard");
});

test("throughout: no CSP violation, uncaught error, foreign request or token in a URL", () => {
  assert.deepEqual(cspViolations, [], "CSP violations");
  assert.deepEqual(pageErrors, [], "uncaught errors");
  assert.deepEqual(foreign, [], "requests to other origins");
  assert.deepEqual(leaks, [], "URLs carrying the token");
  assert.deepEqual(consoleErrors, [], "console errors");
  // The only refusals: the probe before a token and the wrong token (401),
  // and the doctor's answer to the config with a problem (400).
  assert.deepEqual(refused, ["401 GET /v1/whoami", "401 GET /v1/whoami", "400 POST /v1/doctor"], "refused requests");
  assert.ok(audited.length >= 11, `axe-core checked ${audited.length} pages`);
  for (const name of ["datasets", "dataset", "lineage"]) assert.ok(audited.includes(name), `axe-core never checked the ${name} page`);
});
