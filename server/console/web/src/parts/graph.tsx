// The lineage graph (Cytoscape.js with the dagre layout): datasets as
// nodes, sources on the left and sinks on the right, pipelines as edges.
// Drag to pan, scroll or the buttons to zoom, click a dataset to open it.
import cytoscape, { type Core } from "cytoscape";
import dagre from "cytoscape-dagre";
import { useEffect, useRef, useState } from "preact/hooks";
import { count } from "../format";
import { navigate } from "../router";
import type { Schemas } from "../api";

type CatalogLineageEdge = Schemas["CatalogLineageEdge"];

cytoscape.use(dagre);

// Cytoscape inserts an inline <style> for its containers unless an element
// with this id exists. The CSP refuses inline styles, so the rule it would
// add is in styles.css (.lineage-canvas) and this element stands in.
const cytoscapeStyleId = "__________cytoscape_stylesheet";

function standIn(): void {
  if (document.getElementById(cytoscapeStyleId)) return;
  const m = document.createElement("meta");
  m.id = cytoscapeStyleId;
  document.head.append(m);
}

/** The last part of a URI, which tells datasets apart at a glance. */
function tail(uri: string): string {
  const clean = uri.replace(/[?#].*$/, "").replace(/\/+$/, "");
  const cut = Math.max(clean.lastIndexOf("/"), clean.lastIndexOf(":"));
  return cut >= 0 && cut < clean.length - 1 ? clean.slice(cut + 1) : clean;
}

export function LineageGraph({ edges, root }: { edges: CatalogLineageEdge[]; root: string | null }) {
  const host = useRef<HTMLDivElement>(null);
  const cy = useRef<Core | null>(null);
  const [picked, setPicked] = useState<CatalogLineageEdge | null>(null);

  useEffect(() => {
    if (!host.current) return;
    standIn();
    const css = getComputedStyle(host.current);
    const v = (name: string, fallback: string) => css.getPropertyValue(name).trim() || fallback;
    const nodes = new Map<string, string>();
    for (const e of edges) {
      nodes.set(e.src_id, e.src_uri);
      nodes.set(e.dst_id, e.dst_uri);
    }
    const c = cytoscape({
      container: host.current,
      elements: [
        ...[...nodes].map(([id, uri]) => ({ data: { id, label: tail(uri), uri }, classes: id === root ? "root" : "" })),
        ...edges.map((e, i) => ({
          data: { id: `e${i}`, source: e.src_id, target: e.dst_id, label: e.pipeline, index: i },
        })),
      ],
      layout: { name: "dagre", rankDir: "LR", nodeSep: 30, rankSep: 120, padding: 24 } as cytoscape.LayoutOptions,
      minZoom: 0.2,
      maxZoom: 3,
      wheelSensitivity: 0.3,
      style: [
        {
          selector: "node",
          style: {
            shape: "round-rectangle",
            "background-color": v("--surface", "#fff"),
            "border-width": 1.5,
            "border-color": v("--accent", "#2563eb"),
            label: "data(label)",
            color: v("--ink", "#111"),
            "font-size": 12,
            "text-valign": "center",
            "text-halign": "center",
            "text-wrap": "ellipsis",
            "text-max-width": "160px",
            width: 170,
            height: 36,
          },
        },
        { selector: "node.root", style: { "border-width": 3, "background-color": v("--accent-soft", "#dbeafe") } },
        { selector: "node:selected", style: { "border-color": v("--warn", "#b45309"), "border-width": 3 } },
        {
          selector: "edge",
          style: {
            width: 1.5,
            "curve-style": "bezier",
            "line-color": v("--muted", "#888"),
            "target-arrow-color": v("--muted", "#888"),
            "target-arrow-shape": "triangle",
            label: "data(label)",
            "font-size": 10,
            color: v("--muted", "#666"),
            "text-background-color": v("--bg", "#fff"),
            "text-background-opacity": 1,
            "text-background-padding": "2px",
          },
        },
        { selector: "edge:selected", style: { "line-color": v("--warn", "#b45309"), "target-arrow-color": v("--warn", "#b45309"), width: 3 } },
      ],
    });
    c.on("tap", "node", (ev) => navigate(`/datasets/${encodeURIComponent(ev.target.id() as string)}`));
    c.on("tap", "edge", (ev) => setPicked(edges[ev.target.data("index") as number] ?? null));
    c.on("tap", (ev) => {
      if (ev.target === c) setPicked(null);
    });
    cy.current = c;
    (host.current as HTMLDivElement & { cy?: Core }).cy = c;
    return () => {
      c.destroy();
      cy.current = null;
    };
  }, [JSON.stringify(edges), root]);

  const zoom = (factor: number) => {
    const c = cy.current;
    if (!c) return;
    c.zoom({ level: c.zoom() * factor, renderedPosition: { x: c.width() / 2, y: c.height() / 2 } });
  };

  return (
    <div class="lineage">
      <div class="toolbar" role="toolbar" aria-label="Graph view">
        <button type="button" onClick={() => zoom(1.25)} aria-label="Zoom in">
          +
        </button>
        <button type="button" onClick={() => zoom(0.8)} aria-label="Zoom out">
          −
        </button>
        <button type="button" onClick={() => cy.current?.fit(undefined, 24)}>
          Fit
        </button>
        <span class="muted small">Drag to pan, scroll to zoom, click a dataset to open it or a pipeline to see it.</span>
      </div>
      <div class="lineage-canvas" ref={host} role="img" aria-label={`Lineage graph: ${edges.length} pipeline edge(s)`} />
      {picked && (
        <div class="notice" role="status">
          <p>
            <strong>{picked.pipeline}</strong>
            {picked.row && picked.row !== "default" ? ` (row ${picked.row})` : ""}: <span class="mono">{picked.src_uri}</span> →{" "}
            <span class="mono">{picked.dst_uri}</span>
          </p>
          <p class="small">
            {count(picked.runs)} run(s), {count(picked.last_records)} records in the last one.
          </p>
        </div>
      )}
    </div>
  );
}
