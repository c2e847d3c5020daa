// The console's access to the API: one typed client (the repository's
// TypeScript client over the generated types) whose bearer token lives in
// session storage only, so it is forgotten with the tab and never reaches a
// URL or local storage.
import {
  createFaucetClient,
  faucetError,
  FaucetError,
  type FaucetClient,
  type components,
  type RunStatus,
} from "@faucet-dev/faucet-client";

export { FaucetError };
export type { LogLine, RunRecord, RunStatus } from "@faucet-dev/faucet-client";
export type Schemas = components["schemas"];
export type Whoami = Schemas["Whoami"];
export type Role = Schemas["Role"];
export type DoctorReport = Schemas["DoctorReport"];

const tokenKey = "faucet.console.token";
const principalKey = "faucet.console.principal";

/** The bearer token of this tab, if one was entered. */
export function storedToken(): string | null {
  try {
    return sessionStorage.getItem(tokenKey);
  } catch {
    return null;
  }
}

function store(key: string, value: string | null): void {
  try {
    if (value === null) {
      sessionStorage.removeItem(key);
    } else {
      sessionStorage.setItem(key, value);
    }
  } catch {
    // Storage refused (a private window's quota): the value lasts as long
    // as the page instead.
  }
}

/**
 * Who the tab was signed in as when the page last loaded, so that a reload
 * paints its page at once while the server confirms it (a refusal signs the
 * tab out). The name and role are no secret.
 */
export function storedPrincipal(): Whoami | null {
  try {
    const raw = sessionStorage.getItem(principalKey);
    return raw === null ? null : (JSON.parse(raw) as Whoami);
  } catch {
    return null;
  }
}

/** Keeps who the tab is signed in as (null: nobody). */
export function setPrincipal(me: Whoami | null): void {
  store(principalKey, me === null ? null : JSON.stringify(me));
}

let token: string | null = storedToken();
let client: FaucetClient = makeClient();
const unauthorized = new Set<() => void>();

function makeClient(): FaucetClient {
  const c = createFaucetClient({ baseUrl: location.origin, ...(token === null ? {} : { token }) });
  c.use({
    onResponse({ response }) {
      if (response.status === 401) {
        for (const f of unauthorized) f();
      }
      return undefined;
    },
  });
  return c;
}

/** The client, carrying the current token. */
export function api(): FaucetClient {
  return client;
}

/** Uses token (null: none) for every request from now on. */
export function setToken(t: string | null): void {
  token = t;
  store(tokenKey, t);
  if (t === null) setPrincipal(null);
  client = makeClient();
}

/** Calls f whenever the server refuses the token; returns the unsubscribe. */
export function onUnauthorized(f: () => void): () => void {
  unauthorized.add(f);
  return () => unauthorized.delete(f);
}

/** The answer of one openapi-fetch call. */
interface Answer<T> {
  data?: T;
  error?: unknown;
  response: Response;
}

/** The data of a successful call; an error answer throws a FaucetError. */
export async function ok<T>(call: Promise<Answer<T>>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) {
    throw faucetError(response, error);
  }
  return data as T;
}

/** A human sentence for any error a call threw. */
export function describe(e: unknown): string {
  if (e instanceof FaucetError) {
    return e.problem ? e.problem.detail : e.message;
  }
  if (e instanceof Error) return e.message;
  return String(e);
}

/** Roles in order of power. */
const ranks: Record<Role, number> = { viewer: 1, operator: 2, admin: 3 };

/** Whether a principal of role r may do what needs role need. */
export function allows(r: Role | undefined, need: Role): boolean {
  return r !== undefined && ranks[r] >= ranks[need];
}

export const terminal: readonly RunStatus[] = ["completed", "failed", "cancelled"];

/** Whether a run in status s has finished. */
export function isTerminal(s: RunStatus): boolean {
  return terminal.includes(s);
}
