// The active filters as removable chips, and a dialog to add any filter.

import type { JSX } from "preact";
import { useState } from "preact/hooks";
import {
  CHANNELS,
  DIMENSIONS,
  dimensionLabel,
  OP_LABELS,
  OPS,
  parseFilter,
  withFilter,
  words,
  type Op,
} from "./filters";
import { countryName } from "./format";
import { setView, useView } from "./state";
import { SegmentsControl } from "./saved/segments";
import { ValueCombobox } from "./suggest";
import { Modal, Field } from "./ui";

/** A value as the dashboard shows it: a country's name, a device or channel in words. */
export function valueLabel(dim: string, value: string): string {
  if (dim === "country") return countryName(value);
  if (value === "") return "(none)";
  if (dim === "device") return words(value);
  if (dim === "channel") return CHANNELS[value] ?? words(value);
  return value;
}

export function FilterBar(): JSX.Element | null {
  const view = useView();
  const [adding, setAdding] = useState(false);
  const remove = (f: string) => setView({ filters: view.filters.filter((x) => x !== f) });
  return (
    <div class="filters">
      {view.filters.length > 0 && (
        <ul class="chips" aria-label="Active filters">
          {view.filters.map((s) => {
            const f = parseFilter(s);
            if (!f) return null;
            const text = `${dimensionLabel(f.dim)} ${OP_LABELS[f.op]} ${valueLabel(f.dim, f.value)}`;
            return (
              <li key={s} class="chip">
                <span>
                  {dimensionLabel(f.dim)} <em>{OP_LABELS[f.op]}</em>{" "}
                  <strong>{valueLabel(f.dim, f.value)}</strong>
                </span>
                <button type="button" aria-label={`Remove filter: ${text}`} onClick={() => remove(s)}>
                  ×
                </button>
              </li>
            );
          })}
        </ul>
      )}
      <button type="button" class="ghost small" onClick={() => setAdding(true)}>
        + Filter
      </button>
      {view.filters.length > 1 && (
        <button type="button" class="link small" onClick={() => setView({ filters: [] })}>
          Clear all
        </button>
      )}
      <SegmentsControl />
      {adding && <AddFilter onClose={() => setAdding(false)} />}
    </div>
  );
}

function AddFilter(props: { onClose: () => void }): JSX.Element {
  const view = useView();
  const [dim, setDim] = useState("page");
  const [prop, setProp] = useState("");
  const [op, setOp] = useState<Op>("is");
  const [value, setValue] = useState("");
  const dimension = dim === "prop" ? `prop:${prop.trim()}` : dim;
  const ready = dim !== "prop" || prop.trim() !== "";
  const submit = (e: Event) => {
    e.preventDefault();
    if (!ready) return;
    setView({ filters: withFilter(view.filters, { dim: dimension, op, value }) });
    props.onClose();
  };
  return (
    <Modal title="Add a filter" onClose={props.onClose}>
      <form class="stack" onSubmit={submit}>
        <Field label="Dimension">
          {(id) => (
            <>
              <select id={id} value={dim} onChange={(e) => setDim((e.target as HTMLSelectElement).value)}>
                {Object.entries(DIMENSIONS).map(([k, label]) => (
                  <option key={k} value={k}>
                    {label}
                  </option>
                ))}
                <option value="prop">Custom property…</option>
              </select>
            </>
          )}
        </Field>
        {dim === "prop" && (
          <Field label="Property name">
            {(id) => (
              <>
                <input
                  id={id}
                  value={prop}
                  required
                  onInput={(e) => setProp((e.target as HTMLInputElement).value)}
                />
              </>
            )}
          </Field>
        )}
        <Field label="Operator">
          {(id) => (
            <>
              <select id={id} value={op} onChange={(e) => setOp((e.target as HTMLSelectElement).value as Op)}>
                {OPS.map((o) => (
                  <option key={o} value={o}>
                    {OP_LABELS[o]}
                  </option>
                ))}
              </select>
            </>
          )}
        </Field>
        <Field label="Value">
          {(id) => (
            <>
              <ValueCombobox
                id={id}
                dimension={ready ? dimension : null}
                value={value}
                onValue={setValue}
                label={(v) => valueLabel(dimension, v)}
              />
            </>
          )}
        </Field>
        <div class="row-actions">
          <button type="button" onClick={props.onClose}>
            Cancel
          </button>
          <button type="submit" class="primary" disabled={!ready}>
            Apply filter
          </button>
        </div>
      </form>
    </Modal>
  );
}
