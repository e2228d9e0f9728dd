// The saved goals screen: the project's goals listed, created, edited and deleted (a custom
// event, optionally with a property equal to a value, or a page path or pattern with `*`).
// The goals panel reads them through GET /metrics/goals without `goal`.

import type { JSX } from "preact";
import { useState } from "preact/hooks";
import { EditDelete } from "./actions";
import { useQuery } from "../context";
import { Modal, Note, Field } from "../ui";
import { canEdit, changed, errorText, savedPath, useSaved, type SavedGoal } from "./api";

/** A goal as a person reads it: "Event signup (plan = pro)", "Visit /blog/*". */
export function describeGoal(g: Pick<SavedGoal, "kind" | "event" | "page" | "property">): string {
  if (g.kind === "page") return `Visit ${g.page ?? ""}`;
  const prop = g.property ? ` (${g.property.key} = ${g.property.value})` : "";
  return `Event ${g.event ?? ""}${prop}`;
}

interface Draft {
  name: string;
  kind: "event" | "page";
  target: string;
  propKey: string;
  propValue: string;
}

const EMPTY: Draft = { name: "", kind: "event", target: "", propKey: "", propValue: "" };

function draftOf(g: SavedGoal): Draft {
  return {
    name: g.name,
    kind: g.kind,
    target: (g.kind === "page" ? g.page : g.event) ?? "",
    propKey: g.property?.key ?? "",
    propValue: g.property?.value ?? "",
  };
}

function bodyOf(d: Draft, editing: boolean): Record<string, unknown> {
  const body: Record<string, unknown> = { name: d.name.trim(), kind: d.kind, [d.kind]: d.target.trim() };
  if (d.kind === "event" && d.propKey.trim()) {
    body.property = { key: d.propKey.trim(), value: d.propValue };
  } else if (editing && d.kind === "event") {
    body.property = null;
  }
  return body;
}

function GoalForm(props: {
  initial: Draft;
  submit: string;
  onSave: (d: Draft) => Promise<void>;
  onCancel?: () => void;
}): JSX.Element {
  const [d, setD] = useState(props.initial);
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const set = (patch: Partial<Draft>) => setD({ ...d, ...patch });
  const save = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError("");
    try {
      await props.onSave(d);
      if (!props.onCancel) setD(EMPTY);
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="stack saved-form" onSubmit={save} data-testid="goal-form">
      <div class="inline-form">
        <Field class="grow" label="Goal name">
          {(id) => (
            <>
              <input
                id={id}
                value={d.name}
                required
                maxLength={100}
                placeholder="Signups"
                onInput={(e) => set({ name: (e.target as HTMLInputElement).value })}
              />
            </>
          )}
        </Field>
        <Field label="Kind">
          {(id) => (
            <>
              <select
                id={id}
                value={d.kind}
                onChange={(e) => set({ kind: (e.target as HTMLSelectElement).value as Draft["kind"] })}
              >
                <option value="event">Custom event</option>
                <option value="page">Page visit</option>
              </select>
            </>
          )}
        </Field>
      </div>
      <Field label={d.kind === "event" ? "Event name" : "Page path (* matches anything)"}>
        {(id) => (
          <>
            <input
              id={id}
              value={d.target}
              required
              placeholder={d.kind === "event" ? "signup" : "/blog/*"}
              onInput={(e) => set({ target: (e.target as HTMLInputElement).value })}
            />
          </>
        )}
      </Field>
      {d.kind === "event" && (
        <fieldset class="saved-fieldset">
          <legend>Only when a property equals a value (optional)</legend>
          <div class="inline-form">
            <Field class="grow" label="Property">
              {(id) => (
                <>
                  <input
                    id={id}
                    value={d.propKey}
                    placeholder="plan"
                    onInput={(e) => set({ propKey: (e.target as HTMLInputElement).value })}
                  />
                </>
              )}
            </Field>
            <Field class="grow" label="Value">
              {(id) => (
                <>
                  <input
                    id={id}
                    value={d.propValue}
                    required={d.propKey.trim() !== ""}
                    placeholder="pro"
                    onInput={(e) => set({ propValue: (e.target as HTMLInputElement).value })}
                  />
                </>
              )}
            </Field>
          </div>
        </fieldset>
      )}
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

/** The saved goals screen (a dialog): the list, and for the `edit` right the forms. */
export function GoalsScreen(props: { onClose: () => void }): JSX.Element {
  const ctx = useQuery();
  const { api, project } = ctx;
  const goals = useSaved<SavedGoal>(api, project.id, "goals");
  const editable = canEdit(ctx);
  const [editing, setEditing] = useState<string | null>(null);
  const [error, setError] = useState("");
  const create = async (d: Draft) => {
    await api.send("POST", savedPath(project.id, "goals"), bodyOf(d, false));
    changed(api, project.id, "goals");
  };
  const update = async (id: string, d: Draft) => {
    await api.send("PATCH", savedPath(project.id, "goals", id), bodyOf(d, true));
    setEditing(null);
    changed(api, project.id, "goals");
  };
  const remove = async (g: SavedGoal) => {
    setError("");
    try {
      await api.send("DELETE", savedPath(project.id, "goals", g.id));
      changed(api, project.id, "goals");
    } catch (e) {
      setError(errorText(e));
    }
  };
  return (
    <Modal title="Saved goals" onClose={props.onClose}>
      <div data-testid="goals-screen" class="stack">
        <p class="help">
          The goals panel counts these goals' visitors and conversion rates over the chosen range and filters
          {editable ? "" : ". Your role may read them, not change them"}.
        </p>
        {(goals.error || error) && (
          <p class="note error" role="alert">
            {goals.error || error}
          </p>
        )}
        {goals.items === null ? (
          !goals.error && <Note>Loading…</Note>
        ) : goals.items.length === 0 ? (
          <Note>No saved goals yet.</Note>
        ) : (
          <ul class="plain saved-list" aria-label="Saved goals">
            {goals.items.map((g) =>
              editing === g.id ? (
                <li key={g.id} class="editing">
                  <GoalForm
                    initial={draftOf(g)}
                    submit="Save goal"
                    onSave={(d) => update(g.id, d)}
                    onCancel={() => setEditing(null)}
                  />
                </li>
              ) : (
                <li key={g.id} data-goal={g.goal}>
                  <span class="saved-what">
                    <strong>{g.name}</strong>
                    <span class="muted">{describeGoal(g)}</span>
                  </span>
                  {editable && (
                    <span class="saved-actions">
                      <EditDelete
                        what={`goal ${g.name}`}
                        question={`Delete ${g.name}?`}
                        onEdit={() => setEditing(g.id)}
                        onDelete={() => remove(g)}
                      />
                    </span>
                  )}
                </li>
              ),
            )}
          </ul>
        )}
        {editable && editing === null && (
          <section aria-labelledby="new-goal">
            <h3 id="new-goal" class="sub-title">
              New goal
            </h3>
            <GoalForm initial={EMPTY} submit="Add goal" onSave={create} />
          </section>
        )}
      </div>
    </Modal>
  );
}
