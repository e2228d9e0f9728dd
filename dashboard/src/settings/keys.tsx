// A project's keys (public: sends events; secret: reads and manages the project) and share
// links (a share key in a read-only URL): listed, created, rotated and revoked. A clear key is
// shown once, when made; the list shows a key's hint only ("svc_live_...abcd").

import type { JSX } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import type { Api } from "../api";
import { BASE } from "../api";
import { useQuery } from "../context";
import { when } from "../share";
import type { KeyRecord } from "../types";
import { Field, Note } from "../ui";
import { errorText } from "./forms";

const KIND_LABELS: Record<string, string> = {
  public: "Public (sends events)",
  secret: "Secret (reads and manages)",
  share: "Share link",
};

/** The hint the server keeps of `token` (svc.credentials.hint): its prefix and last four. */
function hintOf(token: string): string {
  const i = token.indexOf("_", 4);
  return i < 0 ? "" : `${token.slice(0, i + 1)}...${token.slice(-4)}`;
}

/** Whether `k` is the key this page is signed in with (revoking it signs the page out). */
function isOwn(api: Api, k: KeyRecord): boolean {
  return api.kind === "secret" && !!k.hint && k.hint === hintOf(api.token);
}

/** The project's keys of some kinds, reloaded on demand. */
function useKeys(
  path: string,
  kinds: string[],
): {
  keys: KeyRecord[] | null;
  error: string;
  setError: (e: string) => void;
  load: () => Promise<void>;
} {
  const { api } = useQuery();
  const [keys, setKeys] = useState<KeyRecord[] | null>(null);
  const [error, setError] = useState("");
  const load = async () => {
    try {
      const r = await api.send<{ keys: KeyRecord[] }>("GET", `${path}/keys`);
      setKeys(r.keys.filter((k) => kinds.includes(k.kind) && !k.revokedAt));
    } catch (e) {
      setError(errorText(e));
    }
  };
  useEffect(() => {
    void load();
  }, [path]);
  return { keys, error, setError, load };
}

/** A clear key or link, shown once, with a copy button. */
function ShownOnce(props: { label: string; value: string; testId: string; note?: string }): JSX.Element {
  const out = useRef<HTMLInputElement>(null);
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(props.value);
      setCopied(true);
    } catch {
      out.current?.select();
    }
  };
  return (
    <div class="stack created">
      <Field label={props.label}>
        {(id) => (
          <input
            id={id}
            ref={out}
            readOnly
            value={props.value}
            onFocus={(e) => (e.target as HTMLInputElement).select()}
            data-testid={props.testId}
          />
        )}
      </Field>
      {props.note && <p class="hint">{props.note}</p>}
      <div class="row-actions">
        <button type="button" class="primary" onClick={copy}>
          {copied ? "Copied" : "Copy"}
        </button>
      </div>
      <p class="sr-only" role="status">
        {copied ? "Copied" : ""}
      </p>
    </div>
  );
}

/** A button that asks "Sure?" (Yes / No) before it acts; the focus follows the question (to
 * its Yes) and comes back to the button on No. */
function Confirmed(props: { label: string; name: string; question: string; onYes: () => void }): JSX.Element {
  const [asking, setAsking] = useState(false);
  const [back, setBack] = useState(false);
  const yes = useRef<HTMLButtonElement>(null);
  const button = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (asking) yes.current?.focus();
    else if (back) button.current?.focus();
  }, [asking]);
  if (!asking) {
    return (
      <button
        type="button"
        ref={button}
        class="danger small"
        aria-label={props.name}
        onClick={() => setAsking(true)}
      >
        {props.label}
      </button>
    );
  }
  return (
    <span class="confirm-action" role="group" aria-label={props.question}>
      <span>{props.question}</span>
      <button
        type="button"
        ref={yes}
        class="danger small"
        onClick={() => {
          setAsking(false);
          props.onYes();
        }}
      >
        Yes, {props.label.toLowerCase()}
      </button>
      <button
        type="button"
        class="small"
        onClick={() => {
          setBack(true);
          setAsking(false);
        }}
      >
        No
      </button>
    </span>
  );
}

export function KeysSection(props: { path: string }): JSX.Element {
  const { api, project } = useQuery();
  const { keys, error, setError, load } = useKeys(props.path, ["public", "secret"]);
  const [kind, setKind] = useState("public");
  const [made, setMade] = useState<{ key: string; kind: string; own: boolean } | null>(null);
  const [busy, setBusy] = useState(false);

  const act = async (work: () => Promise<KeyRecord | null>, own = false) => {
    setBusy(true);
    setError("");
    try {
      const r = await work();
      if (r?.key) setMade({ key: r.key, kind: r.kind, own });
      // the page's own key revoked or replaced: any further request signs the page out
      if (!own) await load();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };

  return (
    <div class="stack">
      <p>
        A public key sends events (it is in your pages); a secret key reads the statistics and manages the
        project. A key is shown once, when made: keep it somewhere safe.
      </p>
      {error && (
        <p class="note error" role="alert">
          {error}
        </p>
      )}
      {made && (
        <ShownOnce
          label={`New ${made.kind} key (shown once: copy it now)`}
          value={made.key}
          testId="new-key"
          note={
            made.own
              ? "This replaces the key this page is signed in with: sign in again with the new one."
              : undefined
          }
        />
      )}
      <form
        class="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          void act(() => api.send<KeyRecord>("POST", `${props.path}/keys`, { kind }));
        }}
      >
        <Field label="Kind">
          {(id) => (
            <select id={id} value={kind} onChange={(e) => setKind((e.target as HTMLSelectElement).value)}>
              <option value="public">{KIND_LABELS.public}</option>
              <option value="secret">{KIND_LABELS.secret}</option>
            </select>
          )}
        </Field>
        <button type="submit" disabled={busy}>
          Create a key
        </button>
      </form>
      <h3>Active keys</h3>
      {keys === null ? (
        !error && <Note>Loading…</Note>
      ) : keys.length === 0 ? (
        <Note>None: this project cannot receive events until it has a public or secret key.</Note>
      ) : (
        <div class="table-wrap" tabIndex={0} role="region" aria-label="Active keys">
          <table class="details keys" data-testid="keys">
            <thead>
              <tr>
                <th scope="col">Key</th>
                <th scope="col">Kind</th>
                <th scope="col">Made</th>
                <th scope="col">Last used</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {keys.map((k) => {
                const own = isOwn(api, k);
                const name = k.hint || k.id;
                return (
                  <tr key={k.id} data-key={k.id}>
                    <th scope="row">
                      <code>{name}</code>
                      {own && <span class="muted"> (this page's key)</span>}
                    </th>
                    <td>{KIND_LABELS[k.kind] ?? k.kind}</td>
                    <td>{when(k.createdAt, project.timezone)}</td>
                    <td>{when(k.lastUsedAt, project.timezone)}</td>
                    <td class="key-actions">
                      <Confirmed
                        label="Rotate"
                        name={`Rotate key ${name}`}
                        question={
                          own
                            ? "Replace the key you are signed in with? This page signs out."
                            : "Replace it with a new key? It stops working at once."
                        }
                        onYes={() =>
                          void act(
                            () =>
                              api.send<KeyRecord>(
                                "POST",
                                `${props.path}/keys/${encodeURIComponent(k.id)}/rotate`,
                              ),
                            own,
                          )
                        }
                      />
                      <Confirmed
                        label="Revoke"
                        name={`Revoke key ${name}`}
                        question={
                          own ? "Revoke the key you are signed in with? This page signs out." : "Revoke it?"
                        }
                        onYes={() =>
                          void act(async () => {
                            await api.send("DELETE", `${props.path}/keys/${encodeURIComponent(k.id)}`);
                            return null;
                          }, own)
                        }
                      />
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}

export function ShareLinksSection(props: { path: string }): JSX.Element {
  const { api, project } = useQuery();
  const { keys, error, setError, load } = useKeys(props.path, ["share"]);
  const [link, setLink] = useState("");
  const [busy, setBusy] = useState(false);
  const create = async () => {
    setBusy(true);
    setError("");
    try {
      const r = await api.send<KeyRecord>("POST", `${props.path}/keys`, { kind: "share" });
      setLink(r.key ? `${location.origin}${BASE}/share/${r.key}` : "");
      await load();
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  const revoke = async (id: string) => {
    setError("");
    try {
      await api.send("DELETE", `${props.path}/keys/${encodeURIComponent(id)}`);
      await load();
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <div class="stack">
      <p>
        Anyone with a share link sees this project's dashboard, read-only, without a key. Links do not expire;
        revoke one to close it.
      </p>
      {error && (
        <p class="note error" role="alert">
          {error}
        </p>
      )}
      {link ? (
        <ShownOnce label="New share link (shown once: copy it now)" value={link} testId="new-share-link" />
      ) : null}
      <div class="row-actions">
        <button type="button" class="primary" disabled={busy} onClick={() => void create()}>
          Create a share link
        </button>
      </div>
      <h3>Active share links</h3>
      {keys === null ? (
        !error && <Note>Loading…</Note>
      ) : keys.length === 0 ? (
        <Note>None.</Note>
      ) : (
        <ul class="plain key-list" data-testid="share-links">
          {keys.map((k) => (
            <li key={k.id} data-key={k.id}>
              <span>
                <code>{k.hint || k.id}</code>
                <span class="muted">
                  {" "}
                  made {when(k.createdAt, project.timezone)}, last used {when(k.lastUsedAt, project.timezone)}
                </span>
              </span>
              <Confirmed
                label="Revoke"
                name={`Revoke share link ${k.hint || k.id}`}
                question="Revoke this link? Whoever has it loses access."
                onYes={() => void revoke(k.id)}
              />
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}
