// The sign-in form: the API token, checked against /v1/whoami before it is
// kept (in this tab's session storage only).
import { useEffect, useRef, useState } from "preact/hooks";

export function Login({ reason, onToken }: { reason?: string | undefined; onToken: (t: string) => Promise<string | null> }) {
  const [token, setToken] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.focus(), []);
  return (
    <main id="main" class="login">
      <form
        class="card"
        onSubmit={async (e) => {
          e.preventDefault();
          setBusy(true);
          const err = await onToken(token.trim());
          setBusy(false);
          if (err !== null) {
            setError(err);
            input.current?.focus();
          }
        }}
      >
        <h1>faucet console</h1>
        <p>This server asks for an API token. It is kept in this tab only and sent to this server's API alone.</p>
        {reason && <p class="notice notice-warn">{reason}</p>}
        <label for="token">API token</label>
        <input
          id="token"
          ref={input}
          type="password"
          autocomplete="current-password"
          required
          value={token}
          aria-invalid={error !== null}
          aria-describedby={error !== null ? "token-error" : undefined}
          onInput={(e) => setToken(e.currentTarget.value)}
        />
        {error !== null && (
          <p id="token-error" class="field-error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" class="primary" disabled={busy || token.trim() === ""}>
          {busy ? "Checking…" : "Sign in"}
        </button>
        <p class="muted small">
          The server printed an admin token when it first started; an administrator can give you one with the role you
          need (viewer, operator or admin).
        </p>
      </form>
    </main>
  );
}
