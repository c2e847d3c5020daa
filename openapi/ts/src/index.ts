// The TypeScript client of faucet serve's HTTP API: openapi-fetch over the
// types openapi-typescript generates from openapi/openapi.yaml (./schema.ts),
// plus what a generated client cannot offer: reading the log event stream as
// typed events, and waiting for a run to finish.
import createClient, { type Client, type ClientOptions } from "openapi-fetch";
import type { components, paths } from "./schema.js";

export type { components, operations, paths } from "./schema.js";

type Schemas = components["schemas"];
export type RunRecord = Schemas["RunRecord"];
export type RunStatus = Schemas["RunStatus"];
export type SubmitRequest = Schemas["SubmitRequest"];
export type SubmitResponse = Schemas["SubmitResponse"];
export type ListResponse = Schemas["ListResponse"];
export type LogLine = Schemas["LogLine"];
export type LogPage = Schemas["LogPage"];
export type LogTruncated = Schemas["LogTruncated"];
export type LogEnd = Schemas["LogEnd"];
export type Problem = Schemas["Problem"];
export type ErrorCode = Schemas["ErrorCode"];

/**
 * The media types a FaucetClient reads bodies as: JSON, and problem documents
 * for errors. The log routes' other formats are read as a stream
 * (followLogs) or with parseAs "text".
 */
export type FaucetMedia = "application/json" | "application/problem+json";

/** A client of one faucet serve. */
export type FaucetClient = Client<paths, FaucetMedia>;

export interface FaucetClientOptions extends ClientOptions {
  /** The server, e.g. http://127.0.0.1:8080. */
  baseUrl: string;
  /** The bearer token; omit it for a server started with --no-auth. */
  token?: string;
}

/** Returns a client of the server at options.baseUrl. */
export function createFaucetClient(options: FaucetClientOptions): FaucetClient {
  const { token, ...rest } = options;
  const client = createClient<paths, FaucetMedia>(rest);
  if (token !== undefined) {
    client.use({
      onRequest({ request }) {
        request.headers.set("Authorization", `Bearer ${token}`);
        return request;
      },
    });
  }
  return client;
}

/** Every run status, in lifecycle order. */
export const runStatuses: readonly RunStatus[] = ["pending", "queued", "running", "sharded", "completed", "failed", "cancelled"];

/** The statuses a run ends in. */
export const terminalStatuses: readonly RunStatus[] = ["completed", "failed", "cancelled"];

/** Whether a run in status s has finished. */
export function isTerminal(s: RunStatus): boolean {
  return terminalStatuses.includes(s);
}

/** An error answer of the API, with its problem document when it sent one. */
export class FaucetError extends Error {
  readonly status: number;
  readonly problem: Problem | undefined;

  constructor(status: number, problem: Problem | undefined, fallback: string) {
    super(problem ? `${problem.error.code}: ${problem.detail}` : `HTTP ${status}: ${fallback}`);
    this.name = "FaucetError";
    this.status = status;
    this.problem = problem;
  }

  /** The error envelope's code, when the answer carried one. */
  get code(): ErrorCode | undefined {
    return this.problem?.error.code;
  }
}

/** Turns the error of an openapi-fetch call into a FaucetError. */
export function faucetError(response: Response, error: unknown): FaucetError {
  return new FaucetError(response.status, isProblem(error) ? error : undefined, response.statusText);
}

function isProblem(v: unknown): v is Problem {
  return isObject(v) && typeof v.status === "number" && isObject(v.error) && typeof v.error.code === "string";
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null;
}

export interface WaitOptions {
  /** Time between two polls; 500 ms when omitted. */
  intervalMs?: number;
  /** Stops waiting (the promise rejects with the signal's reason). */
  signal?: AbortSignal;
}

/**
 * Polls a run until it reaches a terminal status and returns its record.
 * An error answer rejects with a FaucetError.
 */
export async function waitForRun(client: FaucetClient, runId: string, options: WaitOptions = {}): Promise<RunRecord> {
  const interval = options.intervalMs ?? 500;
  for (;;) {
    options.signal?.throwIfAborted();
    const { data, error, response } = await client.GET("/v1/runs/{id}", {
      params: { path: { id: runId } },
      signal: options.signal,
    });
    if (data === undefined) {
      throw faucetError(response, error);
    }
    if (isTerminal(data.status)) {
      return data;
    }
    await sleep(interval, options.signal);
  }
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = () => {
      signal?.removeEventListener("abort", abort);
      resolve();
    };
    const timer = setTimeout(done, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    signal?.addEventListener("abort", abort, { once: true });
  });
}

/** One event of a run's log stream. */
export type LogEvent =
  | { event: "log"; data: LogLine }
  | { event: "truncated"; data: LogTruncated }
  | { event: "end"; data: LogEnd };

export interface FollowOptions {
  /** Only lines with a greater seq: where a reader that saw lines resumes. */
  after?: number;
  /** Stops the stream. */
  signal?: AbortSignal;
}

/**
 * Follows a run's logs (GET /v1/runs/{id}/logs/stream): yields its recent
 * lines and then the live tail as typed events, and returns after the end
 * event. An error answer throws a FaucetError.
 */
export async function* followLogs(client: FaucetClient, runId: string, options: FollowOptions = {}): AsyncGenerator<LogEvent, void, undefined> {
  const { error, response } = await client.GET("/v1/runs/{id}/logs/stream", {
    params: { path: { id: runId }, query: options.after === undefined ? {} : { after: options.after } },
    parseAs: "stream",
    signal: options.signal,
  });
  if (!response.ok || response.body === null) {
    throw faucetError(response, error);
  }
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) {
        return;
      }
      buffer += value.replace(/\r\n?/g, "\n");
      let cut: number;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const ev = parseEvent(buffer.slice(0, cut));
        buffer = buffer.slice(cut + 2);
        if (ev === undefined) {
          continue;
        }
        yield ev;
        if (ev.event === "end") {
          return;
        }
      }
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
}

/** Parses one event block; comments (keepalives) and unknown events give undefined. */
function parseEvent(block: string): LogEvent | undefined {
  let name = "message";
  const data: string[] = [];
  for (const line of block.split("\n")) {
    if (line.startsWith("event:")) {
      name = line.slice(6).trim();
    } else if (line.startsWith("data:")) {
      data.push(line.slice(5).replace(/^ /, ""));
    }
  }
  if (data.length === 0) {
    return undefined;
  }
  const v: unknown = JSON.parse(data.join("\n"));
  if (!isObject(v)) {
    throw new Error(`log event ${name}: data is not an object`);
  }
  switch (name) {
    case "log":
      if (typeof v.seq === "number" && typeof v.ts === "string" && typeof v.level === "string" && typeof v.line === "string" && isLevel(v.level)) {
        return { event: "log", data: { seq: v.seq, ts: v.ts, level: v.level, line: v.line } };
      }
      break;
    case "truncated":
      if (typeof v.reason === "string") {
        return { event: "truncated", data: { reason: v.reason } };
      }
      break;
    case "end":
      if (typeof v.run_id === "string") {
        const status = runStatuses.find((s) => s === v.status);
        return { event: "end", data: status === undefined ? { run_id: v.run_id } : { run_id: v.run_id, status } };
      }
      break;
    default:
      return undefined;
  }
  throw new Error(`log event ${name}: unexpected data ${JSON.stringify(v)}`);
}

const levels: readonly LogLine["level"][] = ["debug", "info", "warn", "error"];

function isLevel(s: string): s is LogLine["level"] {
  return levels.some((l) => l === s);
}
