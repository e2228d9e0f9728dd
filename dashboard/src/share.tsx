// Read-only share links: a share token (scope `read`, this project only) in a public URL
// /share/<token>. The token is shown once, when made; links can be revoked at any time.

import type { JSX } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, BASE } from "./api";
import { instantLabel } from "./dates";
import { useQuery } from "./context";
import { writeView } from "./state";
import type { KeyRecord } from "./types";
import { Modal, Note, Field } from "./ui";

/** When a link was made or used, as the dashboard writes a moment (in the project's zone). */
export function when(iso: string | null | undefined, tz: string): string {
  return iso ? instantLabel(iso, tz) : "never";
}

export function ShareDialog(props: { onClose: () => void }): JSX.Element {
  const { api, project, view } = useQuery();
  const [keys, setKeys] = useState<KeyRecord[] | null>(null);
  const [error, setError] = useState("");
  const [created, setCreated] = useState<string | null>(null);
  const [withView, setWithView] = useState(true);
  const [copied, setCopied] = useState(false);
  const [busy, setBusy] = useState(false);
  const out = useRef<HTMLInputElement>(null);
  const base = `/projects/${encodeURIComponent(project.id)}/keys`;

  const load = async () => {
    try {
      const r = await api.send<{ keys: KeyRecord[] }>("GET", base);
      setKeys(r.keys.filter((k) => k.kind === "share" && !k.revokedAt));
    } catch (e) {
      setError(e instanceof ApiError ? e.message : String(e));
    }
  };
  useEffect(() => {
    void load();
  }, [project.id]);

  const create = async () => {
    setBusy(true);
    setError("");
    try {
      const r = await api.send<KeyRecord>("POST", base, { kind: "share" });
      setCreated(r.key ?? null);
      setCopied(false);
      await load();
    } catch (e) {
      setError(e instanceof ApiError ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  };

  const revoke = async (id: string) => {
    setError("");
    try {
      await api.send("DELETE", `${base}/${encodeURIComponent(id)}`);
      await load();
    } catch (e) {
      setError(e instanceof ApiError ? e.message : String(e));
    }
  };

  const query = writeView({ ...view, project: "" });
  const link = created ? `${location.origin}${BASE}/share/${created}${withView ? query : ""}` : "";
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(link);
      setCopied(true);
    } catch {
      out.current?.select();
    }
  };

  return (
    <Modal title={`Share ${project.name}`} onClose={props.onClose}>
      <p>
        Anyone with a share link sees this project's dashboard, read-only, without a key. Links do not expire;
        revoke one to close it.
      </p>
      {error && (
        <p class="note error" role="alert">
          {error}
        </p>
      )}
      {created ? (
        <div class="stack created">
          <Field label="New share link (shown once: copy it now)">
            {(id) => (
              <>
                <input
                  id={id}
                  ref={out}
                  readOnly
                  value={link}
                  onFocus={(e) => (e.target as HTMLInputElement).select()}
                  data-testid="share-link"
                />
              </>
            )}
          </Field>
          <label class="check">
            <input
              type="checkbox"
              checked={withView}
              onChange={(e) => setWithView((e.target as HTMLInputElement).checked)}
            />
            Open it on the current view (date range, filters, segment)
          </label>
          <div class="row-actions">
            <button type="button" class="primary" onClick={copy}>
              {copied ? "Copied" : "Copy link"}
            </button>
          </div>
          <p class="sr-only" role="status">
            {copied ? "Link copied" : ""}
          </p>
        </div>
      ) : (
        <div class="row-actions">
          <button type="button" class="primary" disabled={busy} onClick={create}>
            Create a share link
          </button>
        </div>
      )}
      <h3>Active share links</h3>
      {keys === null ? (
        !error && <Note>Loading…</Note>
      ) : keys.length === 0 ? (
        <Note>None.</Note>
      ) : (
        <ul class="plain key-list">
          {keys.map((k) => (
            <li key={k.id}>
              <span>
                <code>{k.hint || k.id}</code>
                <span class="muted">
                  {" "}
                  made {when(k.createdAt, project.timezone)}, last used {when(k.lastUsedAt, project.timezone)}
                </span>
              </span>
              <button
                type="button"
                class="danger small"
                onClick={() => revoke(k.id)}
                aria-label={`Revoke share link ${k.hint ?? k.id}`}
              >
                Revoke
              </button>
            </li>
          ))}
        </ul>
      )}
    </Modal>
  );
}
