// People's sign-in on the sign-in screen: "Sign in with <label>" when single sign-on is on
// (GET /auth/methods), and the email and password form unless the operator turned it off.
// Single sign-on (docs/api.md, "Single sign-on"): POST /auth/oidc/start gives the provider's
// address and a binding this tab keeps (sessionStorage; no cookie); the provider sends the
// browser back to /auth/oidc/callback, which goes on to /dashboard#sso=<code and state>;
// POST /auth/oidc/finish with the binding then answers the session.

import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import { ForgotPassword, PasswordSignIn } from "./accounts";
import { Api, ApiError } from "./api";
import { ErrorNote, StatusNote } from "./fields";

interface AuthMethods {
  password: boolean;
  sso: { label: string } | null;
}

interface SignedIn {
  token: string;
}

interface Started {
  authorizationUrl: string;
  binding: string;
}

const BINDING_KEY = "svc.dashboard.sso";
const anonymous = new Api("");

/** The provider's answer the callback put in the address: `#sso=<parameters, URL-encoded>`. */
function returned(hash: string = location.hash): URLSearchParams | null {
  const m = /^#sso=(.*)$/.exec(hash);
  if (!m) return null;
  try {
    return new URLSearchParams(decodeURIComponent(m[1]!));
  } catch {
    return null;
  }
}

function message(e: unknown): string {
  return e instanceof ApiError ? e.message : String(e);
}

/** Finishes the sign-in the provider sent this tab back from: the session, or why not. */
async function finish(back: URLSearchParams): Promise<string> {
  const binding = sessionStorage.getItem(BINDING_KEY);
  sessionStorage.removeItem(BINDING_KEY);
  const error = back.get("error");
  if (error) {
    throw new Error(`The provider did not sign you in: ${back.get("error_description") || error}.`);
  }
  if (!binding) throw new Error("This sign-in was begun in another tab or window: sign in again.");
  const r = await anonymous.send<SignedIn>("POST", "/auth/oidc/finish", {
    code: back.get("code") ?? "",
    state: back.get("state") ?? "",
    binding,
  });
  return r.token;
}

/** The sign-in of people: single sign-on and/or the email and password form. */
export function PersonSignIn(props: { onSignedIn: (token: string) => void }): JSX.Element {
  const [methods, setMethods] = useState<AuthMethods | null>(null);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState("");

  useEffect(() => {
    anonymous
      .send<AuthMethods>("GET", "/auth/methods")
      .then(setMethods, () => setMethods({ password: true, sso: null }));
    const back = returned();
    if (!back) return;
    history.replaceState(null, "", location.pathname + location.search); // the code works once
    setBusy(true);
    finish(back)
      .then(props.onSignedIn, (e: unknown) => setError(message(e)))
      .finally(() => setBusy(false));
  }, []);

  const start = async () => {
    setBusy(true);
    setError("");
    try {
      const r = await anonymous.send<Started>("POST", "/auth/oidc/start");
      sessionStorage.setItem(BINDING_KEY, r.binding);
      location.assign(r.authorizationUrl);
    } catch (e) {
      setError(message(e));
      setBusy(false);
    }
  };

  const password = methods?.password ?? false; // shown once known
  return (
    <>
      {methods?.sso && (
        <div class="signin-form" data-testid="sso-signin">
          <button class="primary" type="button" onClick={() => void start()} disabled={busy}>
            Sign in with {methods.sso.label}
          </button>
          <StatusNote text={busy ? "Signing in…" : ""} />
          <ErrorNote text={error} />
        </div>
      )}
      {!methods?.sso && <ErrorNote text={error} />}
      {password && (
        <>
          <p class="lead">
            {methods?.sso ? "Or with your email and password." : "Sign in with your email and password."}
          </p>
          <PasswordSignIn onSignedIn={props.onSignedIn} />
          <ForgotPassword />
        </>
      )}
    </>
  );
}
