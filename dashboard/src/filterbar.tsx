// The active filters as removable chips, and a dialog to add any filter.

import type { JSX } from "preact";
import { useState } from "preact/hooks";
import { useData, useQuery } from "./context";
import { DIMENSIONS, dimensionLabel, OP_LABELS, OPS, parseFilter, withFilter, type Op } from "./filters";
import { countryName } from "./format";
import { setView, useView } from "./state";
import type { BreakdownAnswer } from "./types";
import { Modal, Field } from "./ui";

export function valueLabel(dim: string, value: string): string {
  if (dim === "country") return countryName(value);
  return value === "" ? "(none)" : value;
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
      {adding && <AddFilter onClose={() => setAdding(false)} />}
    </div>
  );
}

function AddFilter(props: { onClose: () => void }): JSX.Element {
  const view = useView();
  const { base } = useQuery();
  const [dim, setDim] = useState("page");
  const [prop, setProp] = useState("");
  const [op, setOp] = useState<Op>("is");
  const [value, setValue] = useState("");
  const dimension = dim === "prop" ? `prop:${prop.trim()}` : dim;
  const ready = dim !== "prop" || prop.trim() !== "";
  const suggestions = useData<BreakdownAnswer>(ready ? "/metrics/breakdown" : null, [
    ...base,
    ["by", dimension],
    ["limit", "25"],
  ]);
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
              <input
                id={id}
                value={value}
                list="filter-values"
                autocomplete="off"
                onInput={(e) => setValue((e.target as HTMLInputElement).value)}
              />
              <datalist id="filter-values">
                {(suggestions.data?.rows ?? []).map((r) => (
                  <option key={r.value} value={r.value}>
                    {valueLabel(dimension, r.value)}
                  </option>
                ))}
              </datalist>
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
