// Form fields bound to a string state, and a form's outcome lines: the label, control, hint
// and live-region wiring the account screens repeat, written once. The DOM is that of `Field`
// (ui.tsx): `<div class="field"><label for=id>…</label><control id=id …/></div>`.

import type { ComponentChildren, InputHTMLAttributes, JSX, LooseInputHTMLAttributes } from "preact";
import { Field } from "./ui";

/** The `<input>` attributes a field passes through as they are (type, autocomplete, …). */
type InputAttributes = Omit<
  LooseInputHTMLAttributes<HTMLInputElement>,
  "id" | "value" | "onInput" | "class" | "className" | "label" | "children"
>;

/**
 * A labelled `<input>` showing `value`; each keystroke calls `onValue` with the new text (no
 * `onValue`: the input only shows the value, e.g. `readOnly`). `class` goes on the field's
 * wrapper. `hint` is a help line after the field (`<p id={hint.id} class="help">`) that the
 * input names with `aria-describedby`; other attributes reach the `<input>` unchanged.
 */
export function TextField(
  props: InputAttributes & {
    label: ComponentChildren;
    value: string;
    onValue?: (value: string) => void;
    class?: string;
    hint?: { id: string; text: ComponentChildren };
  },
): JSX.Element {
  const { label, value, onValue, class: wrapper, hint, ...input } = props;
  // One shape with or without a hint, so that Preact keeps the input when the hint comes or goes.
  return (
    <>
      <Field class={wrapper} label={label}>
        {(id) => (
          <input
            id={id}
            {...(input as InputHTMLAttributes<HTMLInputElement>)}
            value={value}
            aria-describedby={hint ? hint.id : input["aria-describedby"]}
            onInput={onValue && ((e) => onValue((e.target as HTMLInputElement).value))}
          />
        )}
      </Field>
      {hint && (
        <p id={hint.id} class="help">
          {hint.text}
        </p>
      )}
    </>
  );
}

/** A labelled `<select>` of `options` (each an option's value and text), `value` chosen. */
export function SelectField(props: {
  label: ComponentChildren;
  value: string;
  onValue: (value: string) => void;
  options: readonly { value: string; text: ComponentChildren }[];
  class?: string;
}): JSX.Element {
  return (
    <Field class={props.class} label={props.label}>
      {(id) => (
        <select
          id={id}
          value={props.value}
          onChange={(e) => props.onValue((e.target as HTMLSelectElement).value)}
        >
          {props.options.map((o) => (
            <option key={o.value} value={o.value}>
              {o.text}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}

/** A form's error, announced at once (`role="alert"`); nothing while `text` is empty. */
export function ErrorNote(props: { text: string }): JSX.Element | null {
  return props.text ? (
    <p class="note error" role="alert">
      {props.text}
    </p>
  ) : null;
}

/** A form's news, announced politely (`role="status"`); nothing while `text` is empty. */
export function StatusNote(props: { text: string; testid?: string }): JSX.Element | null {
  return props.text ? (
    <p class="note" role="status" data-testid={props.testid}>
      {props.text}
    </p>
  ) : null;
}
