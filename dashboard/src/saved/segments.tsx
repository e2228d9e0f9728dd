// Segments: saved filter sets, personal (an account's own) or shared with the team, chosen
// from the filter bar. Applying one writes its filters (and its id) into the address, so a
// share link made from the view carries it; `?segment=<id>` alone applies it on opening.

import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import { EditDelete } from "./actions";
import { useQuery } from "../context";
import { valueLabel } from "../filterbar";
import { dimensionLabel, OP_LABELS, parseFilter } from "../filters";
import { setView, useView } from "../state";
import { Modal, Note, Field } from "../ui";
import { canEdit, canKeepPersonal, changed, errorText, savedPath, useSaved, type Segment } from "./api";

function same(a: string[], b: string[]): boolean {
  return a.length === b.length && [...a].sort().join("\n") === [...b].sort().join("\n");
}

/** A segment's filters in words, as the filter bar's chips: "Device is Mobile, Country is
 * Germany". */
export function filtersText(filters: string[]): string {
  return filters
    .map((s) => {
      const f = parseFilter(s);
      return f ? `${dimensionLabel(f.dim)} ${OP_LABELS[f.op]} ${valueLabel(f.dim, f.value)}` : s;
    })
    .join(", ");
}

/** The filter bar's segment control: the applied segment's name and a button to the screen. */
export function SegmentsControl(): JSX.Element {
  const { api, project } = useQuery();
  const view = useView();
  const segments = useSaved<Segment>(api, project.id, "segments");
  const [open, setOpen] = useState(false);
  const chosen = segments.items?.find((s) => s.id === view.segment) ?? null;
  // A link that names a segment and no filters opens on the segment's filters.
  useEffect(() => {
    if (chosen && view.filters.length === 0) setView({ filters: chosen.filters }, true);
  }, [chosen?.id]);
  const active = chosen && same(chosen.filters, view.filters) ? chosen : null;
  return (
    <>
      {active && (
        <span class="chip segment-chip" data-testid="active-segment">
          <span>
            Segment <strong>{active.name}</strong>
          </span>
        </span>
      )}
      <button
        type="button"
        class="ghost small"
        data-testid="segments-button"
        aria-haspopup="dialog"
        onClick={() => setOpen(true)}
      >
        Segments
      </button>
      {open && <SegmentsScreen onClose={() => setOpen(false)} />}
    </>
  );
}

function SegmentRow(props: {
  segment: Segment;
  mayChange: boolean;
  mayShare: boolean;
  onApply: () => void;
}): JSX.Element {
  const { api, project } = useQuery();
  const view = useView();
  const s = props.segment;
  const [editing, setEditing] = useState(false);
  const [name, setName] = useState(s.name);
  const [shared, setShared] = useState(s.shared);
  const [useCurrent, setUseCurrent] = useState(false);
  const [error, setError] = useState("");
  const save = async (e: Event) => {
    e.preventDefault();
    setError("");
    try {
      const body: Record<string, unknown> = { name: name.trim() };
      if (shared !== s.shared) body.shared = shared;
      if (useCurrent) body.filters = view.filters;
      await api.send("PATCH", savedPath(project.id, "segments", s.id), body);
      setEditing(false);
      changed(api, project.id, "segments");
    } catch (err) {
      setError(errorText(err));
    }
  };
  const remove = async () => {
    setError("");
    try {
      await api.send("DELETE", savedPath(project.id, "segments", s.id));
      if (view.segment === s.id) setView({ segment: "" }, true);
      changed(api, project.id, "segments");
    } catch (err) {
      setError(errorText(err));
    }
  };
  return (
    <li data-segment={s.name} class={editing ? "editing" : undefined}>
      {editing ? (
        <form class="stack saved-form" onSubmit={save}>
          <Field label="Name">
            {(id) => (
              <>
                <input
                  id={id}
                  value={name}
                  required
                  maxLength={100}
                  onInput={(e) => setName((e.target as HTMLInputElement).value)}
                />
              </>
            )}
          </Field>
          {props.mayShare && (
            <label class="check">
              <input
                type="checkbox"
                checked={shared}
                onChange={(e) => setShared((e.target as HTMLInputElement).checked)}
              />
              Shared with the team
            </label>
          )}
          {view.filters.length > 0 && !same(view.filters, s.filters) && (
            <label class="check">
              <input
                type="checkbox"
                checked={useCurrent}
                onChange={(e) => setUseCurrent((e.target as HTMLInputElement).checked)}
              />
              Replace its filters by the current ones ({filtersText(view.filters)})
            </label>
          )}
          {error && (
            <p class="note error" role="alert">
              {error}
            </p>
          )}
          <div class="row-actions">
            <button type="button" onClick={() => setEditing(false)}>
              Cancel
            </button>
            <button type="submit" class="primary">
              Save segment
            </button>
          </div>
        </form>
      ) : (
        <>
          <span class="saved-what">
            <strong>
              {s.name} <span class="badge">{s.shared ? "Shared" : "Personal"}</span>
            </strong>
            <span class="muted">{filtersText(s.filters)}</span>
          </span>
          <span class="saved-actions">
            <button
              type="button"
              class="small"
              aria-label={`Apply segment ${s.name}`}
              onClick={props.onApply}
            >
              Apply
            </button>
            {props.mayChange && (
              <EditDelete
                what={`segment ${s.name}`}
                question={`Delete ${s.name}?`}
                onEdit={() => setEditing(true)}
                onDelete={remove}
              />
            )}
          </span>
          {error && (
            <p class="note error" role="alert">
              {error}
            </p>
          )}
        </>
      )}
    </li>
  );
}

/** The segments screen (a dialog): apply one, save the current filters as one, and change
 * one's own personal segments (and, with `edit`, the shared ones). */
export function SegmentsScreen(props: { onClose: () => void }): JSX.Element {
  const ctx = useQuery();
  const { api, project } = ctx;
  const view = useView();
  const segments = useSaved<Segment>(api, project.id, "segments");
  const editor = canEdit(ctx);
  const personal = canKeepPersonal(ctx);
  const [name, setName] = useState("");
  const [shared, setShared] = useState(!personal);
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const create = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError("");
    try {
      const made = await api.send<Segment>("POST", savedPath(project.id, "segments"), {
        name: name.trim(),
        filters: view.filters,
        shared,
      });
      setName("");
      setView({ segment: made.id }, true);
      changed(api, project.id, "segments");
    } catch (err) {
      setError(errorText(err));
    } finally {
      setBusy(false);
    }
  };
  const apply = (s: Segment) => {
    setView({ filters: s.filters, segment: s.id });
    props.onClose();
  };
  const list = segments.items ?? [];
  return (
    <Modal title="Segments" onClose={props.onClose}>
      <div class="stack" data-testid="segments-screen">
        <p class="help">
          A segment is a saved set of filters: personal (yours alone) or shared with everyone who reads this
          project.
        </p>
        {segments.error && (
          <p class="note error" role="alert">
            {segments.error}
          </p>
        )}
        {segments.items === null ? (
          !segments.error && <Note>Loading…</Note>
        ) : list.length === 0 ? (
          <Note>No segments yet.</Note>
        ) : (
          <ul class="plain saved-list" aria-label="Segments">
            {list.map((s) => (
              <SegmentRow
                key={s.id}
                segment={s}
                mayChange={s.shared ? editor : personal}
                mayShare={editor}
                onApply={() => apply(s)}
              />
            ))}
          </ul>
        )}
        {(personal || editor) && (
          <section aria-labelledby="new-segment">
            <h3 id="new-segment" class="sub-title">
              Save the current filters
            </h3>
            {view.filters.length === 0 ? (
              <Note>Add filters first (“+ Filter”, or a row of any panel), then save them here.</Note>
            ) : (
              <form class="stack saved-form" onSubmit={create} data-testid="segment-form">
                <p class="muted">{filtersText(view.filters)}</p>
                <Field label="Segment name">
                  {(id) => (
                    <>
                      <input
                        id={id}
                        value={name}
                        required
                        maxLength={100}
                        onInput={(e) => setName((e.target as HTMLInputElement).value)}
                      />
                    </>
                  )}
                </Field>
                {editor && personal && (
                  <label class="check">
                    <input
                      type="checkbox"
                      checked={shared}
                      onChange={(e) => setShared((e.target as HTMLInputElement).checked)}
                    />
                    Share with the team
                  </label>
                )}
                {editor && !personal && (
                  <p class="help">Saved as a shared segment (a key keeps no personal ones).</p>
                )}
                {error && (
                  <p class="note error" role="alert">
                    {error}
                  </p>
                )}
                <div class="row-actions">
                  <button type="submit" class="primary" disabled={busy}>
                    Save segment
                  </button>
                </div>
              </form>
            )}
          </section>
        )}
      </div>
    </Modal>
  );
}
