// Builds the console into ../dist, which the Go package embeds. The build is
// deterministic (the same sources and package-lock.json give the same bytes),
// so `task verify` can rebuild it and compare with what is committed.
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

const here = (p) => fileURLToPath(new URL(p, import.meta.url));

export default defineConfig({
  base: "/",
  publicDir: false,
  resolve: {
    alias: {
      // The repository's typed API client, compiled from its sources.
      "@faucet-dev/faucet-client": here("../../../openapi/ts/src/index.ts"),
    },
    // The client's sources import openapi-fetch; take this package's copy.
    dedupe: ["openapi-fetch"],
  },
  oxc: {
    jsx: { runtime: "automatic", importSource: "preact" },
  },
  build: {
    outDir: here("../dist"),
    emptyOutDir: true,
    assetsDir: "assets",
    target: "es2022",
    sourcemap: false,
    reportCompressedSize: false,
    // The shell's CSP allows no inline script, and every supported browser
    // has module preloading.
    modulePreload: { polyfill: false },
    // The editor, the graph and the chart libraries are their own chunks,
    // loaded by the pages that use them.
    chunkSizeWarningLimit: 800,
    // The build's timing report varies from run to run and says nothing
    // about the output.
    rolldownOptions: { checks: { bundlerTimings: false } },
  },
});
