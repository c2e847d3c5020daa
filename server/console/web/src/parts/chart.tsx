// A bar chart of records per run (Chart.js), with the same numbers in a
// table for those who do not see the canvas.
import { BarController, BarElement, CategoryScale, Chart, LinearScale, Tooltip } from "chart.js";
import { useEffect, useRef } from "preact/hooks";
import { count } from "../format";
import { TableHead } from "../ui";

Chart.register(BarController, BarElement, CategoryScale, LinearScale, Tooltip);

export interface Point {
  label: string;
  value: number;
  title: string;
}

export function BarChart({ points, label }: { points: Point[]; label: string }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  useEffect(() => {
    const el = canvas.current;
    if (!el) return;
    const css = getComputedStyle(el);
    const bar = css.getPropertyValue("--accent").trim() || "#2563eb";
    const ink = css.getPropertyValue("--muted").trim() || "#666";
    const grid = css.getPropertyValue("--line").trim() || "#ddd";
    const chart = new Chart(el, {
      type: "bar",
      data: {
        labels: points.map((p) => p.label),
        datasets: [{ label, data: points.map((p) => p.value), backgroundColor: bar, borderRadius: 3 }],
      },
      options: {
        responsive: true,
        maintainAspectRatio: false,
        animation: false,
        plugins: {
          tooltip: { callbacks: { title: (items) => points[items[0]?.dataIndex ?? 0]?.title ?? "" } },
        },
        scales: {
          x: { ticks: { color: ink, maxRotation: 0, autoSkip: true }, grid: { display: false } },
          y: { beginAtZero: true, ticks: { color: ink, precision: 0 }, grid: { color: grid } },
        },
      },
    });
    return () => chart.destroy();
  }, [JSON.stringify(points)]);
  const total = points.reduce((s, p) => s + p.value, 0);
  return (
    <figure class="chart">
      <div class="chart-box">
        <canvas ref={canvas} role="img" aria-label={`${label}: ${points.length} runs, ${count(total)} records in all`} />
      </div>
      <details>
        <summary>The numbers</summary>
        <table class="table">
          <TableHead caption={label} cols={["Run", ["Records", "num"]]} />
          <tbody>
            {points.map((p, i) => (
              <tr key={i}>
                <td>{p.title}</td>
                <td class="num">{count(p.value)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}
