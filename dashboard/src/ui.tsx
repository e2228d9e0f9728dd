// Small shared pieces: tabs, dialogs, notes.

import type { ComponentChildren, JSX } from "preact";
import { useEffect, useId, useRef } from "preact/hooks";
import type { ApiError } from "./api";

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
