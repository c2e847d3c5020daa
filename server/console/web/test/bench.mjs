// The console's benchmark: how soon the runs page paints its first runs,
// measured by the browser itself (the Element Timing entry of the runs'
// cells, from the navigation's start), over FAUCET_BENCH_LOADS loads of
// /runs in a signed-in tab: the first with an empty cache, then reloads.
// Beside it, the reference of the same load: when the page's /v1/runs answer
// arrived (its Resource Timing entry), which no console can paint before.
// Prints one "BENCH {json}" line per load; the Go benchmark reports them.
import { base, launch, token } from "./harness.mjs";

const loads = Number(process.env.FAUCET_BENCH_LOADS ?? 10);
const browser = await launch();
try {
  // Signed in as the console keeps a sign-in: the token in session storage.
  await browser.context.addInitScript((t) => sessionStorage.setItem("faucet.console.token", t), token);
  const page = await browser.context.newPage();
  for (let i = 0; i < loads; i++) {
    if (i === 0) await page.goto(`${base}/runs`);
    else await page.reload();
    const m = await page.evaluate(
      () =>
        new Promise((resolve, reject) => {
          setTimeout(() => reject(new Error("the runs page painted no runs within a minute")), 60_000);
          new PerformanceObserver((list, obs) => {
            const e = list.getEntries().find((x) => x.identifier === "runs");
            if (!e) return;
            obs.disconnect();
            const fcp = performance.getEntriesByName("first-contentful-paint")[0];
            const runs = performance
              .getEntriesByType("resource")
              .find((r) => new URL(r.name).pathname === "/v1/runs");
            resolve({
              rows_ms: e.renderTime || e.loadTime,
              fcp_ms: fcp ? fcp.startTime : null,
              answered_ms: runs ? runs.responseEnd : null,
              rows: document.querySelectorAll("table.runs tbody tr").length,
            });
          }).observe({ type: "element", buffered: true });
        }),
    );
    console.log(`BENCH ${JSON.stringify({ load: i, cold: i === 0, ...m })}`);
  }
} finally {
  await browser.close();
}
