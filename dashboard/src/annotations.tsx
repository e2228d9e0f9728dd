// Annotations: dated notes of a project ("launched v2"), drawn as markers on the time charts
// and listed under the main chart, where the `edit` right adds, edits and deletes them (a
// click on a day of the chart, or Enter on the day the arrow keys chose, starts a note for
// that day). `day` is the note's day in the project's time zone, where the charts draw it.

import type { JSX } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { EditDelete } from "./saved/actions";
import type { Api } from "./api";
import { useQuery } from "./context";
import { dayLabel, isDay, type Range } from "./dates";
import {
  canEdit,
  changed,
  errorText,
  savedPath,
  useSaved,
  type Annotation,
  type SavedList,
} from "./saved/api";
import { Field, Note } from "./ui";
import "./saved/saved.css";

/** The project's annotations of the view's range. */
export function useAnnotations(): SavedList<Annotation> {
  const { api, project, range } = useQuery();
  return useSaved<Annotation>(api, project.id, "annotations", `from=${range.from}&to=${range.to}`);
}

/** An annotation of one of several projects: its project's name and time zone. */
export type ProjectNote = Annotation & { project: string; timezone: string };

/** The annotations of several projects in a range (the "All projects" chart), each with its
 * project's name and zone; at most 20 projects are read. */
export function useProjectsAnnotations(
  api: Api,
  projects: { id: string; name: string; timezone: string }[],
  range: Range,
): ProjectNote[] {
  const [found, setFound] = useState<ProjectNote[]>([]);
  const key = projects.map((p) => p.id).join(",");
  useEffect(() => {
    let live = true;
    const q = `?from=${range.from}&to=${range.to}`;
    void Promise.all(
      projects.slice(0, 20).map((p) =>
        api
          .send<{ annotations: Annotation[] }>("GET", savedPath(p.id, "annotations") + q)
          .then((r) => r.annotations.map((a) => ({ ...a, project: p.name, timezone: p.timezone })))
          .catch((): ProjectNote[] => []),
      ),
    ).then((lists) => {
      if (live) setFound(lists.flat().sort((a, b) => a.day.localeCompare(b.day)));
    });
    return () => {
      live = false;
    };
  }, [key, range.from, range.to]);
  return found;
}

/** The hour (`YYYY-MM-DDTHH:00`) of a moment in `tz`; a day's note: its midnight. */
function hourOf(a: Annotation, tz: string): string {
  if (isDay(a.date)) return `${a.day}T00:00`;
  try {
    const h = new Intl.DateTimeFormat("en-GB", { timeZone: tz, hour: "2-digit", hourCycle: "h23" }).format(
      new Date(a.date),
    );
    return `${a.day}T${h.padStart(2, "0")}:00`;
  } catch {
    return `${a.day}T00:00`;
  }
}

/** The index of the point (bucket) of `times` an annotation falls in, or -1: the last bucket
 * that starts at or before it (hours, days, weeks from Monday, months). */
export function bucketOf(a: Annotation, times: string[], interval: string, tz: string): number {
  const key = interval === "hour" ? hourOf(a, tz) : a.day;
  let found = -1;
  for (let i = 0; i < times.length; i++) {
    if (times[i]! <= key) found = i;
    else break;
  }
  if (found < 0) return -1;
  const t = times[found]!;
  if (interval === "day" && t !== key) return -1;
  if (interval === "hour" && t.slice(0, 10) !== key.slice(0, 10)) return -1;
  if (interval === "month" && t.slice(0, 7) !== key.slice(0, 7)) return -1;
  return found;
}

/** The notes of each point of `times`, by index. */
export function notesByPoint<T extends Annotation & { timezone?: string }>(
  notes: T[],
  times: string[],
  interval: string,
  tz: string,
): Map<number, T[]> {
  const out = new Map<number, T[]>();
  for (const a of notes) {
    const i = bucketOf(a, times, interval, a.timezone ?? tz);
    if (i < 0) continue;
    out.set(i, [...(out.get(i) ?? []), a]);
  }
  return out;
}

/** The first day of a point's bucket (`2026-12` is the month's first day). */
export function dayOfPoint(time: string): string {
  const day = time.slice(0, 10);
  return isDay(day) ? day : `${time.slice(0, 7)}-01`;
}

/** The markers of a chart's SVG: a dashed line and a flag at each point that has notes (the
 * notes as the flag's title; the list under the chart says them to everyone). */
export function AnnotationMarkers(props: {
  notes: Map<number, (Annotation & { project?: string })[]>;
  x: (i: number) => number;
  top: number;
  bottom: number;
}): JSX.Element {
  return (
    <g class="annotations" data-testid="annotation-markers">
      {[...props.notes].map(([i, list]) => (
        <g key={i} class="annotation-marker" data-index={i} data-count={list.length}>
          <line x1={props.x(i)} x2={props.x(i)} y1={props.top} y2={props.bottom} />
          <circle cx={props.x(i)} cy={props.top} r={4} />
          <title>{list.map((a) => (a.project ? `${a.project}: ${a.text}` : a.text)).join("\n")}</title>
        </g>
      ))}
    </g>
  );
}

/** A note in words for a chart's spoken readout: "; notes: launched v2". */
export function notesReadout(list: Annotation[] | undefined): string {
  return list && list.length
    ? `; ${list.length === 1 ? "note" : "notes"}: ${list.map((a) => a.text).join("; ")}`
    : "";
}

function NoteForm(props: {
  day: string;
  text: string;
  submit: string;
  onSave: (day: string, text: string) => Promise<void>;
  onCancel: () => void;
  focus?: boolean;
}): JSX.Element {
  const [day, setDay] = useState(props.day);
  const [text, setText] = useState(props.text);
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (props.focus) input.current?.focus();
  }, []);
  useEffect(() => setDay(props.day), [props.day]);
  return (
    <form
      class="inline-form note-form"
      data-testid="note-form"
      onSubmit={async (e) => {
        e.preventDefault();
        setBusy(true);
        setError("");
        try {
          await props.onSave(day, text.trim());
        } catch (err) {
          setError(errorText(err));
        } finally {
          setBusy(false);
        }
      }}
      onKeyDown={(e) => {
        if (e.key === "Escape") {
          e.preventDefault();
          props.onCancel();
        }
      }}
    >
      <Field label="Day">
        {(id) => (
          <>
            <input
              id={id}
              type="date"
              value={day}
              required
              onChange={(e) => setDay((e.target as HTMLInputElement).value)}
            />
          </>
        )}
      </Field>
      <Field class="grow" label="Note">
        {(id) => (
          <>
            <input
              id={id}
              ref={input}
              value={text}
              required
              maxLength={500}
              placeholder="Launched v2"
              onInput={(e) => setText((e.target as HTMLInputElement).value)}
            />
          </>
        )}
      </Field>
      <button type="button" onClick={props.onCancel}>
        Cancel
      </button>
      <button type="submit" class="primary" disabled={busy}>
        {props.submit}
      </button>
      {error && (
        <p class="note error" role="alert">
          {error}
        </p>
      )}
    </form>
  );
}

/** The notes of the range under the main chart, and (with `edit`) the form to add one:
 * `draft` is the day a click or Enter on the chart chose, null when no note is being added. */
export function AnnotationList(props: {
  notes: SavedList<Annotation>;
  draft: string | null;
  onDraft: (day: string | null) => void;
}): JSX.Element | null {
  const ctx = useQuery();
  const { api, project, range } = ctx;
  const editable = canEdit(ctx);
  const [editing, setEditing] = useState<string | null>(null);
  const [error, setError] = useState("");
  const items = props.notes.items ?? [];
  const create = async (day: string, text: string) => {
    await api.send("POST", savedPath(project.id, "annotations"), { date: day, text });
    props.onDraft(null);
    changed(api, project.id, "annotations");
  };
  const update = async (a: Annotation, day: string, text: string) => {
    const body: Record<string, string> = { text };
    if (day !== a.day) body.date = day;
    await api.send("PATCH", savedPath(project.id, "annotations", a.id), body);
    setEditing(null);
    changed(api, project.id, "annotations");
  };
  const remove = async (a: Annotation) => {
    setError("");
    try {
      await api.send("DELETE", savedPath(project.id, "annotations", a.id));
      changed(api, project.id, "annotations");
    } catch (e) {
      setError(errorText(e));
    }
  };
  if (!editable && items.length === 0) return null;
  const multiYear = range.from.slice(0, 4) !== range.to.slice(0, 4);
  return (
    <section class="annotations-list" aria-labelledby="notes-title" data-testid="annotations">
      <div class="notes-head">
        <h3 id="notes-title">Notes</h3>
        {editable && props.draft === null && (
          <button
            type="button"
            class="link small"
            onClick={() => props.onDraft(range.to)}
            title="Or click a day of the chart (Enter on the day the arrow keys chose)"
          >
            + Note
          </button>
        )}
      </div>
      {props.notes.error && <Note>{props.notes.error}</Note>}
      {error && (
        <p class="note error" role="alert">
          {error}
        </p>
      )}
      {editable && props.draft !== null && (
        <NoteForm
          day={props.draft}
          text=""
          submit="Add note"
          focus
          onSave={create}
          onCancel={() => props.onDraft(null)}
        />
      )}
      {items.length > 0 && (
        <ul class="plain saved-list notes">
          {items.map((a) =>
            editing === a.id ? (
              <li key={a.id} class="editing">
                <NoteForm
                  day={a.day}
                  text={a.text}
                  submit="Save note"
                  focus
                  onSave={(day, text) => update(a, day, text)}
                  onCancel={() => setEditing(null)}
                />
              </li>
            ) : (
              <li key={a.id} data-day={a.day}>
                <span class="saved-what">
                  <span class="note-day">{dayLabel(a.day, multiYear)}</span>
                  <span class="note-text">{a.text}</span>
                </span>
                {editable && (
                  <span class="saved-actions">
                    <EditDelete
                      what={`note of ${dayLabel(a.day, true)}: ${a.text}`}
                      question="Delete this note?"
                      onEdit={() => setEditing(a.id)}
                      onDelete={() => remove(a)}
                    />
                  </span>
                )}
              </li>
            ),
          )}
        </ul>
      )}
    </section>
  );
}

/** The notes of every project under the "All projects" chart, each with its project. */
export function ProjectNotesList(props: { notes: ProjectNote[]; range: Range }): JSX.Element | null {
  if (props.notes.length === 0) return null;
  const multiYear = props.range.from.slice(0, 4) !== props.range.to.slice(0, 4);
  return (
    <section class="annotations-list" aria-labelledby="overview-notes-title" data-testid="annotations">
      <div class="notes-head">
        <h3 id="overview-notes-title">Notes</h3>
      </div>
      <ul class="plain saved-list notes">
        {props.notes.map((a) => (
          <li key={a.id} data-day={a.day}>
            <span class="saved-what">
              <span class="note-day">{dayLabel(a.day, multiYear)}</span>
              <span class="note-text">
                <strong>{a.project}</strong> {a.text}
              </span>
            </span>
          </li>
        ))}
      </ul>
    </section>
  );
}
