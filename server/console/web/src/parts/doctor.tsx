// A doctor report: each invocation's connector probes, passed or failed.
import type { DoctorReport as Report } from "../api";
import { TableHead } from "../ui";

export function DoctorReport({ report }: { report: Report }) {
  return (
    <div class="doctor">
      <p class={report.ok ? "ok-text" : "error-text"}>
        {report.ok ? "Every probe passed." : "A probe failed: the run would not start."}
      </p>
      <table class="table">
        <TableHead caption="Doctor probes" cols={["Invocation", "Role", "Connector", "Probe", "Result", "Message", ["Took", "num"]]} />
        <tbody>
          {report.invocations.flatMap((inv) =>
            inv.checks.map((c, i) => (
              <tr key={`${inv.row_id}-${i}`}>
                <td class="mono">{inv.row_id}</td>
                <td>{c.role}</td>
                <td>{c.connector}</td>
                <td>{c.name}</td>
                <td>
                  <span class={`status status-${c.ok ? "completed" : "failed"}`}>{c.ok ? "passed" : "failed"}</span>
                </td>
                <td>{c.message}</td>
                <td class="num">{c.duration_ms} ms</td>
              </tr>
            )),
          )}
        </tbody>
      </table>
    </div>
  );
}

/** The report a 422 carried in its problem's details, if it is one. */
export function reportIn(details: unknown): Report | undefined {
  if (typeof details !== "object" || details === null) return undefined;
  const d = details as Partial<Report>;
  return typeof d.ok === "boolean" && Array.isArray(d.invocations) ? (d as Report) : undefined;
}
