// The console's shell: who is signed in, the navigation, and the page of the
// current path.
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { api, describe, ok, onUnauthorized, setPrincipal, setToken, storedPrincipal, storedToken, type Whoami } from "./api";
import { Login } from "./login";
import { Link, match, useLocation, type Location } from "./router";
import { lazyPage, type PageProps } from "./lazy";
import { Runs } from "./pages/runs";
import { Toasts } from "./ui";
import "./styles.css";

const pages: { pattern: string; page: (p: PageProps) => preact.JSX.Element | null }[] = [
  { pattern: "/", page: Runs },
  { pattern: "/runs", page: Runs },
  { pattern: "/runs/:id", page: lazyPage(() => import("./pages/run"), "run") },
  { pattern: "/submit", page: lazyPage(() => import("./pages/submit"), "the editor") },
  { pattern: "/connectors", page: lazyPage(() => import("./pages/connectors"), "connectors") },
  { pattern: "/connectors/:kind/:name", page: lazyPage(() => import("./pages/connectors"), "connectors") },
  { pattern: "/datasets", page: lazyPage(() => import("./pages/datasets"), "datasets") },
  { pattern: "/datasets/:id", page: lazyPage(() => import("./pages/dataset"), "dataset") },
  { pattern: "/lineage", page: lazyPage(() => import("./pages/lineage"), "lineage") },
  { pattern: "/templates", page: lazyPage(() => import("./pages/templates"), "templates") },
  { pattern: "/templates/:id", page: lazyPage(() => import("./pages/template"), "template") },
  { pattern: "/cluster", page: lazyPage(() => import("./pages/cluster"), "cluster") },
];

const nav: [string, string][] = [
  ["/runs", "Runs"],
  ["/submit", "Submit"],
  ["/connectors", "Connectors"],
  ["/datasets", "Datasets"],
  ["/lineage", "Lineage"],
  ["/templates", "Templates"],
  ["/cluster", "Cluster"],
];

function section(path: string): string {
  if (path === "/") return "/runs";
  const first = "/" + (path.split("/")[1] ?? "");
  return first;
}

function Page({ loc, me }: { loc: Location; me: Whoami }) {
  for (const { pattern, page: P } of pages) {
    const params = match(pattern, loc.path);
    if (params) return <P key={pattern + loc.path} params={params} query={loc.query} me={me} />;
  }
  return (
    <section>
      <h1 tabIndex={-1}>No such page</h1>
      <p>
        The console has no page at <code>{loc.path}</code>. <Link href="/runs">Go to the runs</Link>.
      </p>
    </section>
  );
}

type Session = { state: "checking" } | { state: "signed-out"; reason?: string } | { state: "in"; me: Whoami };

function App() {
  const loc = useLocation();
  const [session, setSession] = useState<Session>(() => {
    const me = storedPrincipal();
    return me ? { state: "in", me } : { state: "checking" };
  });
  const signedIn = (me: Whoami) => {
    setPrincipal(me);
    setSession({ state: "in", me });
  };

  const check = async () => {
    try {
      signedIn(await ok(api().GET("/v1/whoami")));
    } catch (e) {
      setPrincipal(null);
      setSession({ state: "signed-out", ...(storedToken() === null ? {} : { reason: describe(e) }) });
    }
  };

  useEffect(() => {
    void check();
    return onUnauthorized(() => {
      setToken(null);
      setSession({ state: "signed-out", reason: "The server refused the token: sign in again." });
    });
  }, []);

  if (session.state === "checking") {
    return (
      <p class="muted boot" role="status">
        Connecting…
      </p>
    );
  }
  if (session.state === "signed-out") {
    return (
      <Login
        reason={session.reason}
        onToken={async (t) => {
          setToken(t);
          try {
            signedIn(await ok(api().GET("/v1/whoami")));
            return null;
          } catch (e) {
            setToken(null);
            return describe(e);
          }
        }}
      />
    );
  }
  const me = session.me;
  const here = section(loc.path);
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <Link class="brand" href="/runs">
          faucet
        </Link>
        <nav aria-label="Console">
          <ul>
            {nav.map(([href, label]) => (
              <li key={href}>
                <Link href={href} aria-current={here === href ? "page" : undefined}>
                  {label}
                </Link>
              </li>
            ))}
          </ul>
        </nav>
        <div class="who">
          {me.auth_enabled ? (
            <>
              <span title="signed in as">
                {me.name} <span class="role">{me.role}</span>
              </span>
              <button
                type="button"
                onClick={() => {
                  setToken(null);
                  setSession({ state: "signed-out" });
                }}
              >
                Sign out
              </button>
            </>
          ) : (
            <span class="role" title="the server runs with --no-auth">
              no auth
            </span>
          )}
        </div>
      </header>
      <main id="main" tabIndex={-1}>
        <Page loc={loc} me={me} />
      </main>
      <Toasts />
    </>
  );
}

const root = document.getElementById("app");
if (root) render(<App />, root);
