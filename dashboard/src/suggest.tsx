// The filter dialog's value field: a WAI-ARIA combobox that suggests the values of a dimension
// as one types (GET /metrics/values, docs/api.md), the most visitors first.

import type { JSX } from "preact";
import { useEffect, useId, useState } from "preact/hooks";
import { useQuery } from "./context";
import { parseFilter } from "./filters";
import { num } from "./format";

/** How long typing must pause before the values are asked for. */
export const DEBOUNCE_MS = 150;
const LIMIT = "10";

export interface ValuesAnswer {
  dimension: string;
  q: string;
  values: { value: string; visitors: number }[];
}

/** The values of `dimension` holding `q` (debounced), under the page's filters on other
 * dimensions; null until the first answer, and while `dimension` is null. */
function useValues(dimension: string | null, q: string): ValuesAnswer | null {
  const { api, base } = useQuery();
  const [answer, setAnswer] = useState<ValuesAnswer | null>(null);
  // the range and the filters on other dimensions: a filter on this one would hide its values
  const params = base.filter(([k, v]) => k !== "filter" || parseFilter(v)?.dim !== dimension);
  const key = dimension ? api.url("/metrics/values", [...params, ["dimension", dimension], ["q", q]]) : "";
  useEffect(() => {
    if (!dimension) {
      setAnswer(null);
      return;
    }
    let stale = false;
    const timer = window.setTimeout(() => {
      api
        .get<ValuesAnswer>("/metrics/values", [
          ...params,
          ["dimension", dimension],
          ["q", q],
          ["limit", LIMIT],
        ])
        .then(
          (a) => {
            if (!stale) setAnswer(a);
          },
          () => {
            if (!stale) setAnswer(null);
          },
        );
    }, DEBOUNCE_MS);
    return () => {
      stale = true;
      clearTimeout(timer);
    };
  }, [key]);
  return answer;
}

/** A text input with a list of suggested values: arrow keys move through them (the input keeps
 * the focus, `aria-activedescendant` names the option), Enter or a click picks one, Escape
 * closes the list (a second Escape closes the dialog). */
export function ValueCombobox(props: {
  id: string;
  /** null: no suggestions (a custom property without its name yet). */
  dimension: string | null;
  value: string;
  onValue: (v: string) => void;
  label: (value: string) => string;
}): JSX.Element {
  const [open, setOpen] = useState(false);
  const [active, setActive] = useState(-1);
  const answer = useValues(props.dimension, props.value);
  const listId = useId();
  // while the next answer is on its way, the last one's values that still hold the text
  const text = props.value.toLowerCase();
  const holds = (v: string) => v.toLowerCase().includes(text) || props.label(v).toLowerCase().includes(text);
  const shown = !answer
    ? []
    : answer.q === props.value
      ? answer.values
      : answer.values.filter((o) => holds(o.value));
  const options = open ? shown : [];
  const expanded = options.length > 0;
  const optionId = (i: number) => `${listId}-o${i}`;

  const pick = (v: string) => {
    props.onValue(v);
    setOpen(false);
    setActive(-1);
  };
  const onKey = (e: KeyboardEvent) => {
    const n = options.length;
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      e.preventDefault();
      if (!open) {
        setOpen(true);
        setActive(-1);
        return;
      }
      if (n === 0) return;
      const step = e.key === "ArrowDown" ? 1 : -1;
      setActive(active < 0 ? (step > 0 ? 0 : n - 1) : (active + step + n) % n);
    } else if (e.key === "Enter" && expanded && active >= 0 && active < n) {
      e.preventDefault();
      pick(options[active]!.value);
    } else if (e.key === "Escape" && expanded) {
      e.preventDefault(); // the list closes, not the dialog
      e.stopPropagation();
      setOpen(false);
      setActive(-1);
    }
  };

  return (
    <div class="combobox">
      <input
        id={props.id}
        type="text"
        role="combobox"
        autocomplete="off"
        aria-autocomplete="list"
        aria-expanded={expanded}
        aria-controls={listId}
        aria-activedescendant={expanded && active >= 0 ? optionId(active) : undefined}
        value={props.value}
        onInput={(e) => {
          props.onValue((e.target as HTMLInputElement).value);
          setOpen(true);
          setActive(-1);
        }}
        onFocus={() => setOpen(true)}
        onBlur={() => setOpen(false)}
        onKeyDown={onKey}
      />
      <ul id={listId} role="listbox" class="suggestions" aria-label="Suggestions" hidden={!expanded}>
        {options.map((o, i) => (
          <li
            key={o.value}
            id={optionId(i)}
            role="option"
            aria-selected={i === active}
            class={i === active ? "active" : undefined}
            data-value={o.value}
            // pointerdown would blur the input first and close the list before the click
            onMouseDown={(e) => e.preventDefault()}
            onClick={() => pick(o.value)}
          >
            <span class="label">{props.label(o.value)}</span>
            <span class="num">
              {num(o.visitors)}
              <span class="sr-only"> visitors</span>
            </span>
          </li>
        ))}
      </ul>
    </div>
  );
}
