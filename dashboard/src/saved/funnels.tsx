// The saved funnels screen: the project's funnels listed, created, edited and deleted. A step
// is written as GET /metrics/funnel takes `step` (`page:/pricing`, `event:signup`), its
// alternatives separated by `|` (`page:/pricing|page:/plans`). The funnel panel reads a
// saved funnel with `funnel=<id>`.

import type { JSX } from "preact";
import { useState } from "preact/hooks";
import { EditDelete } from "./actions";
import { useQuery } from "../context";
import { Modal, Note, Field } from "../ui";
import { canEdit, changed, errorText, savedPath, useSaved, type SavedFunnel } from "./api";

export const WINDOWS: [string, string][] = [
  ["1800", "30 minutes"],
  ["3600", "1 hour"],
  ["86400", "1 day"],
  ["604800", "7 days"],
];

/** A window in words: "30 minutes", or its seconds when it is not one of the choices. */
export function windowLabel(seconds: number | undefined): string {
  const s = String(seconds ?? 1800);
  return WINDOWS.find(([v]) => v === s)?.[1] ?? `${s} seconds`;
}

/** A step as a person reads it: "Visit /pricing or Visit /plans", "signup". */
export function stepLabel(step: string): string {
  return step
    .split(/(?<!\\)\|/)
    .map((alt) => {
      const i = alt.indexOf(":");
      const value = alt.slice(i + 1).replace(/\\([|\\])/g, "$1");
      return alt.slice(0, i) === "page" ? `Visit ${value}` : value;
    })
    .join(" or ");
}

interface Draft {
  name: string;
  steps: string[];
  window: string;
}

function FunnelForm(props: {
  initial: Draft;
  submit: string;
  onSave: (d: Draft) => Promise<void>;
  onCancel?: () => void;
}): JSX.Element {
  const [d, setD] = useState(props.initial);
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const setStep = (i: number, v: string) => setD({ ...d, steps: d.steps.map((s, j) => (j === i ? v : s)) });
  const save = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError("");
    try {
      await props.onSave({ ...d, steps: d.steps.map((s) => s.trim()).filter(Boolean) });
      if (!props.onCancel) setD({ name: "", steps: ["", ""], window: "1800" });
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="stack saved-form" onSubmit={save} data-testid="funnel-form">
      <Field label="Funnel name">
        {(id) => (
          <>
            <input
              id={id}
              value={d.name}
              required
              maxLength={100}
              placeholder="Signup"
              onInput={(e) => setD({ ...d, name: (e.target as HTMLInputElement).value })}
            />
          </>
        )}
      </Field>
      <p class="help">
        Each step is <code>page:/path</code> (<code>*</code> matches anything) or <code>event:name</code>;
        alternatives are separated by <code>|</code>, as in <code>page:/pricing|page:/plans</code>.
      </p>
      <ol class="edit-list steps">
        {d.steps.map((s, i) => (
          <li key={i} class="inline-form">
            <Field class="grow" label={`Step ${i + 1}`}>
              {(id) => (
                <>
                  <input
                    id={id}
                    value={s}
                    required={i < 2}
                    placeholder={i === 0 ? "page:/" : "event:signup"}
                    spellcheck={false}
                    onInput={(e) => setStep(i, (e.target as HTMLInputElement).value)}
                  />
                </>
              )}
            </Field>
            {d.steps.length > 2 && (
              <button
                type="button"
                class="link small"
                aria-label={`Remove step ${i + 1}`}
                onClick={() => setD({ ...d, steps: d.steps.filter((_, j) => j !== i) })}
              >
                Remove
              </button>
            )}
          </li>
        ))}
      </ol>
      <div class="inline-form">
        {d.steps.length < 8 && (
          <button type="button" onClick={() => setD({ ...d, steps: [...d.steps, ""] })}>
            + Step
          </button>
        )}
        <Field label="Within">
          {(id) => (
            <>
              <select
                id={id}
                value={d.window}
                onChange={(e) => setD({ ...d, window: (e.target as HTMLSelectElement).value })}
              >
                {WINDOWS.some(([v]) => v === d.window) ? null : (
                  <option value={d.window}>{windowLabel(Number(d.window))}</option>
                )}
                {WINDOWS.map(([v, l]) => (
                  <option key={v} value={v}>
                    {l}
                  </option>
                ))}
              </select>
            </>
          )}
        </Field>
      </div>
      {error && (
        <p class="note error" role="alert">
          {error}
        </p>
      )}
      <div class="row-actions">
        {props.onCancel && (
          <button type="button" onClick={props.onCancel}>
            Cancel
          </button>
        )}
        <button type="submit" class="primary" disabled={busy}>
          {props.submit}
        </button>
      </div>
    </form>
  );
}

function bodyOf(d: Draft): Record<string, unknown> {
  return { name: d.name.trim(), steps: d.steps, window: Number(d.window) };
}

/** The saved funnels screen (a dialog); `steps`: the funnel on screen, offered as the new one. */
export function FunnelsScreen(props: { steps: string[]; window: string; onClose: () => void }): JSX.Element {
  const ctx = useQuery();
  const { api, project } = ctx;
  const funnels = useSaved<SavedFunnel>(api, project.id, "funnels");
  const editable = canEdit(ctx);
  const [editing, setEditing] = useState<string | null>(null);
  const [error, setError] = useState("");
  const create = async (d: Draft) => {
    await api.send("POST", savedPath(project.id, "funnels"), bodyOf(d));
    changed(api, project.id, "funnels");
  };
  const update = async (id: string, d: Draft) => {
    await api.send("PATCH", savedPath(project.id, "funnels", id), bodyOf(d));
    setEditing(null);
    changed(api, project.id, "funnels");
  };
  const remove = async (f: SavedFunnel) => {
    setError("");
    try {
      await api.send("DELETE", savedPath(project.id, "funnels", f.id));
      changed(api, project.id, "funnels");
    } catch (e) {
      setError(errorText(e));
    }
  };
  const fresh: Draft = {
    name: "",
    steps: props.steps.length >= 2 ? props.steps : ["", ""],
    window: props.window || "1800",
  };
  return (
    <Modal title="Saved funnels" onClose={props.onClose} wide>
      <div data-testid="funnels-screen" class="stack">
        <p class="help">
          Choose a saved funnel in the funnel panel
          {editable ? "" : ". Your role may read them, not change them"}.
        </p>
        {(funnels.error || error) && (
          <p class="note error" role="alert">
            {funnels.error || error}
          </p>
        )}
        {funnels.items === null ? (
          !funnels.error && <Note>Loading…</Note>
        ) : funnels.items.length === 0 ? (
          <Note>No saved funnels yet.</Note>
        ) : (
          <ul class="plain saved-list" aria-label="Saved funnels">
            {funnels.items.map((f) =>
              editing === f.id ? (
                <li key={f.id} class="editing">
                  <FunnelForm
                    initial={{ name: f.name, steps: f.steps, window: String(f.window ?? 1800) }}
                    submit="Save funnel"
                    onSave={(d) => update(f.id, d)}
                    onCancel={() => setEditing(null)}
                  />
                </li>
              ) : (
                <li key={f.id} data-funnel={f.id}>
                  <span class="saved-what">
                    <strong>{f.name}</strong>
                    <span class="muted">
                      {f.steps.map(stepLabel).join(" → ")} · within {windowLabel(f.window)}
                    </span>
                  </span>
                  {editable && (
                    <span class="saved-actions">
                      <EditDelete
                        what={`funnel ${f.name}`}
                        question={`Delete ${f.name}?`}
                        onEdit={() => setEditing(f.id)}
                        onDelete={() => remove(f)}
                      />
                    </span>
                  )}
                </li>
              ),
            )}
          </ul>
        )}
        {editable && editing === null && (
          <section aria-labelledby="new-funnel">
            <h3 id="new-funnel" class="sub-title">
              New funnel
            </h3>
            <FunnelForm initial={fresh} submit="Add funnel" onSave={create} />
          </section>
        )}
      </div>
    </Modal>
  );
}
