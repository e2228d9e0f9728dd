// Small shared pieces: tabs, dialogs, notes.

import type { ComponentChildren, JSX } from "preact";
import { useEffect, useId, useRef } from "preact/hooks";
import type { ApiError } from "./api";
import { useView } from "./state";

export interface Tab {
  id: string;
  label: string;
}

/** A WAI-ARIA tab list: arrow keys move between tabs, the chosen one is selected. */
export function Tabs(props: {
  label: string;
  tabs: Tab[];
  value: string;
  onChange: (id: string) => void;
  controls?: string;
}): JSX.Element {
  const ref = useRef<HTMLDivElement>(null);
  const onKey = (e: KeyboardEvent) => {
    const i = props.tabs.findIndex((t) => t.id === props.value);
    let next = -1;
    if (e.key === "ArrowRight") next = (i + 1) % props.tabs.length;
    else if (e.key === "ArrowLeft") next = (i - 1 + props.tabs.length) % props.tabs.length;
    else if (e.key === "Home") next = 0;
    else if (e.key === "End") next = props.tabs.length - 1;
    if (next < 0) return;
    e.preventDefault();
    props.onChange(props.tabs[next]!.id);
    requestAnimationFrame(() =>
      ref.current?.querySelector<HTMLButtonElement>('[aria-selected="true"]')?.focus(),
    );
  };
  return (
    <div class="tabs" role="tablist" aria-label={props.label} ref={ref} onKeyDown={onKey}>
      {props.tabs.map((t) => (
        <button
          type="button"
          role="tab"
          key={t.id}
          aria-selected={t.id === props.value}
          aria-controls={props.controls}
          tabIndex={t.id === props.value ? 0 : -1}
          onClick={() => props.onChange(t.id)}
        >
          {t.label}
        </button>
      ))}
    </div>
  );
}

/** A modal <dialog>: focus stays inside, Escape closes it. */
export function Modal(props: {
  title: string;
  onClose: () => void;
  children: ComponentChildren;
  wide?: boolean;
}): JSX.Element {
  const ref = useRef<HTMLDialogElement>(null);
  const id = useId();
  useEffect(() => {
    const d = ref.current;
    if (d && !d.open) d.showModal();
    return () => d?.close();
  }, []);
  return (
    <dialog
      ref={ref}
      class={props.wide ? "modal wide" : "modal"}
      aria-labelledby={id}
      onClose={props.onClose}
      onClick={(e) => {
        if (e.target === ref.current) props.onClose();
      }}
    >
      <div class="modal-head">
        <h2 id={id}>{props.title}</h2>
        <button type="button" class="icon-btn" aria-label="Close" onClick={props.onClose}>
          ×
        </button>
      </div>
      <div class="modal-body">{props.children}</div>
    </dialog>
  );
}

export function Note(props: {
  error?: ApiError | null;
  empty?: boolean;
  children?: ComponentChildren;
}): JSX.Element {
  if (props.error) {
    return (
      <p class="note error" role="alert">
        Could not load: {props.error.message}
      </p>
    );
  }
  return <p class="note">{props.children ?? "No data for this range."}</p>;
}

export function Skeleton(props: { rows?: number }): JSX.Element {
  return (
    <div class="skeleton" aria-hidden="true">
      {Array.from({ length: props.rows ?? 5 }, (_, i) => (
        <div key={i} class="sk-row" />
      ))}
    </div>
  );
}

/** A labelled form control: `<label for>` names the control (and nothing else). */
export function Field(props: {
  label: ComponentChildren;
  class?: string;
  hideLabel?: boolean;
  children: (id: string) => ComponentChildren;
}): JSX.Element {
  const id = useId();
  return (
    <div class={props.class ? `field ${props.class}` : "field"}>
      <label for={id} class={props.hideLabel ? "sr-only" : undefined}>
        {props.label}
      </label>
      {props.children(id)}
    </div>
  );
}

/**
 * A breakdown row's change against the comparison period: the API's `change` of the row's main
 * figure (relative percent, or percentage points with `pp`), as an arrow and a number, named
 * for screen readers ("+12.5% against the previous period"). Empty when the change is null (no
 * earlier figure to relate it to) or Compare is off; `upIsBad` colours a rise as bad news.
 */
export function RowChange(props: {
  change: number | null | undefined;
  pp?: boolean;
  upIsBad?: boolean;
}): JSX.Element {
  const { compare } = useView();
  const c = props.change;
  if (compare === "off" || c === null || c === undefined) return <span class="num delta" />;
  const size = Math.abs(c);
  const unit = props.pp ? " pp" : "%";
  const label = `${c > 0 ? "+" : c < 0 ? "-" : ""}${size.toFixed(1)}${unit} against the previous ${
    compare === "previous_year" ? "year" : "period"
  }`;
  const mood = c === 0 ? "flat" : c > 0 !== !!props.upIsBad ? "good" : "bad";
  return (
    <span class={`num delta change ${mood}`} data-testid="row-change" data-change={c} title={label}>
      <span aria-hidden="true">
        {c > 0 ? "↑" : c < 0 ? "↓" : ""}
        {size >= 100 ? Math.round(size) : size.toFixed(1)}
        {unit}
      </span>
      <span class="sr-only"> {label}</span>
    </span>
  );
}
