// Reports beyond breakdowns: custom properties, goals, funnels, revenue and errors.
// A report whose endpoint this server does not have (404) is not shown.

import type { ComponentChildren, JSX } from "preact";
import { useEffect, useId, useState } from "preact/hooks";
import type { ApiError, Params } from "./api";
import { useData, useQuery, type Loaded } from "./context";
import { goalFilter, withFilter, type Filter } from "./filters";
import { exactNum, money, num, pct, percentValue } from "./format";
import { setView, useView } from "./state";
import type {
  BreakdownAnswer,
  ErrorsAnswer,
  FunnelAnswer,
  GoalsAnswer,
  PropertyKeysAnswer,
  PropertyValuesAnswer,
  RevenueAnswer,
} from "./types";
import { Note, RowChange, Skeleton, Field } from "./ui";
import { useSaved, useVersion, type SavedFunnel } from "./saved/api";
import { FunnelsScreen, stepLabel } from "./saved/funnels";
import { GoalsScreen } from "./saved/goals";

function rate(v: string | number): string {
  return typeof v === "string" ? v : pct(v);
}

export function useHidden(...errors: (ApiError | null)[]): boolean {
  const [hidden, setHidden] = useState(false);
  const missing = errors.some((e) => e?.missing);
  useEffect(() => {
    if (missing) setHidden(true);
  }, [missing]);
  return hidden || missing;
}

export function Report(props: {
  id: string;
  title: string;
  actions?: ComponentChildren;
  children: ComponentChildren;
  wide?: boolean;
}): JSX.Element {
  return (
    <section
      class={props.wide ? "card panel wide" : "card panel"}
      aria-labelledby={`report-${props.id}`}
      data-panel={props.id}
    >
      <div class="card-head">
        <h2 id={`report-${props.id}`}>{props.title}</h2>
        {props.actions}
      </div>
      <div class="panel-body">{props.children}</div>
    </section>
  );
}

/** Rows of (label, numbers) as filter buttons, with a bar for the first number; with `change`
 * (Compare on), each row's change of its first number after it (`RowChange`). */
export function SimpleRows(props: {
  head: string[];
  rows: {
    key: string;
    label: string;
    /** An end of the label always shown (a link's last path segment): the label's start is
     * shortened first, with an ellipsis, so rows that differ at their end stay told apart. */
    tail?: string;
    /** The label's title (the full text where the label is shortened); the label by default. */
    title?: string;
    nums: string[];
    bar: number;
    filter: Filter | null;
    /** More filters the row's click adds with `filter` (a saved goal's property match). */
    also?: Filter[];
    change?: number | null | undefined;
  }[];
  change?: { upIsBad?: boolean } | undefined;
}): JSX.Element {
  const view = useView();
  const hint = useId();
  const max = Math.max(1, ...props.rows.map((r) => r.bar));
  return (
    <div class="rows">
      <div class="rows-head" aria-hidden="true">
        {props.head.map((h, i) => [
          <span key={h} class={i ? "num" : ""}>
            {h}
          </span>,
          i === 1 && props.change && <span key="delta" class="num delta" />,
        ])}
      </div>
      <p id={hint} class="sr-only">
        Choose a row to filter the whole page by it.
      </p>
      <ul class="plain" aria-label={props.head[0]}>
        {props.rows.map((r) => (
          <li key={r.key}>
            <button
              type="button"
              class="row"
              data-value={r.key}
              disabled={!r.filter}
              aria-describedby={r.filter ? hint : undefined}
              onClick={() =>
                r.filter &&
                setView({ filters: [r.filter, ...(r.also ?? [])].reduce(withFilter, view.filters) })
              }
            >
              <span class="cell">
                <span class="bar" style={{ width: `${Math.max(1, (r.bar / max) * 100).toFixed(1)}%` }} />
                <span class="label" title={r.title ?? r.label + (r.tail ?? "")}>
                  {r.tail ? (
                    <>
                      <span class="sr-only">{r.label + r.tail}</span>
                      <span class="label-split" aria-hidden="true">
                        <span class="label-head">{r.label}</span>
                        <span class="label-tail">{r.tail}</span>
                      </span>
                    </>
                  ) : (
                    r.label
                  )}
                </span>
              </span>
              {r.nums.map((n, i) => [
                <span key={i} class="num" data-testid={i === 0 ? "row-num" : undefined}>
                  {n}
                  <span class="sr-only"> {props.head[i + 1]?.toLowerCase()}</span>
                </span>,
                i === 0 && props.change && (
                  <RowChange key="delta" change={r.change} upIsBad={props.change.upIsBad} />
                ),
              ])}
            </button>
          </li>
        ))}
      </ul>
    </div>
  );
}

export function Body<T>(props: {
  data: Loaded<T>;
  empty: (d: T) => boolean;
  emptyText?: ComponentChildren;
  children: (d: T) => JSX.Element;
}): JSX.Element {
  const { data } = props;
  if (data.error) return <Note error={data.error} />;
  if (!data.data) return <Skeleton />;
  if (props.empty(data.data)) return <Note>{props.emptyText}</Note>;
  return <div class={data.loading ? "loading" : ""}>{props.children(data.data)}</div>;
}

// --- custom properties -------------------------------------------------------------------------

export function PropertiesView(): JSX.Element {
  const { base } = useQuery();
  const view = useView();
  const keys = useData<PropertyKeysAnswer>("/metrics/properties", base);
  const list = keys.data?.keys ?? [];
  const key = view.prop && list.some((k) => k.key === view.prop) ? view.prop : (list[0]?.key ?? "");
  const values = useData<PropertyValuesAnswer>(key ? "/metrics/properties" : null, [...base, ["key", key]]);
  if (keys.error) {
    return keys.error.missing ? (
      <Note>This server does not break down custom properties.</Note>
    ) : (
      <Note error={keys.error} />
    );
  }
  if (!keys.data) return <Skeleton />;
  if (list.length === 0) return <Note>No custom properties in this range.</Note>;
  return (
    <div>
      <Field class="inline prop-pick" label="Property">
        {(id) => (
          <>
            <select
              id={id}
              value={key}
              onChange={(e) => setView({ prop: (e.target as HTMLSelectElement).value }, true)}
            >
              {list.map((k) => (
                <option key={k.key} value={k.key}>
                  {k.key} ({exactNum(k.events)})
                </option>
              ))}
            </select>
          </>
        )}
      </Field>
      <Body data={values} empty={(d) => d.values.length === 0}>
        {(d) => (
          <SimpleRows
            head={[key, "Visitors", "Events"]}
            rows={d.values.slice(0, 10).map((v) => ({
              key: v.value,
              label: v.value === "" ? "(none)" : v.value,
              nums: [num(v.visitors), num(v.events)],
              bar: v.visitors,
              filter: { dim: `prop:${key}`, op: "is", value: v.value },
            }))}
          />
        )}
      </Body>
    </div>
  );
}

// --- goals -------------------------------------------------------------------------------------

function goalLabel(goal: string): string {
  const i = goal.indexOf(":");
  const kind = goal.slice(0, i);
  const value = goal.slice(i + 1);
  return kind === "page" ? `Visit ${value}` : value;
}

function GoalEditor(props: { goals: string[]; onDone: () => void }): JSX.Element {
  const [goals, setGoals] = useState(props.goals);
  const [kind, setKind] = useState("event");
  const [value, setValue] = useState("");
  const add = (e: Event) => {
    e.preventDefault();
    const v = value.trim();
    if (!v) return;
    const g = `${kind}:${v}`;
    if (!goals.includes(g)) setGoals([...goals, g]);
    setValue("");
  };
  return (
    <div class="editor">
      <ul class="plain edit-list" aria-label="Goals">
        {goals.map((g) => (
          <li key={g}>
            <span>{g}</span>
            <button
              type="button"
              class="link small"
              aria-label={`Remove goal ${g}`}
              onClick={() => setGoals(goals.filter((x) => x !== g))}
            >
              Remove
            </button>
          </li>
        ))}
      </ul>
      <form class="inline-form" onSubmit={add}>
        <Field label="Kind">
          {(id) => (
            <>
              <select id={id} value={kind} onChange={(e) => setKind((e.target as HTMLSelectElement).value)}>
                <option value="event">Event</option>
                <option value="page">Page visit</option>
              </select>
            </>
          )}
        </Field>
        <Field class="grow" label={<>{kind === "event" ? "Event name" : "Page path (* matches anything)"}</>}>
          {(id) => (
            <>
              <input
                id={id}
                value={value}
                placeholder={kind === "event" ? "signup" : "/pricing*"}
                onInput={(e) => setValue((e.target as HTMLInputElement).value)}
              />
            </>
          )}
        </Field>
        <button type="submit">Add</button>
      </form>
      <div class="row-actions">
        <button type="button" onClick={props.onDone}>
          Cancel
        </button>
        <button
          type="button"
          class="primary"
          onClick={() => {
            setView({ goals });
            props.onDone();
          }}
        >
          Save goals
        </button>
      </div>
    </div>
  );
}

export function GoalsPanel(): JSX.Element | null {
  const { base, project } = useQuery();
  const view = useView();
  const [editing, setEditing] = useState(false);
  const [managing, setManaging] = useState(false);
  const adhoc = view.goals.length > 0;
  // Without goals in the address: the project's saved goals; none saved, its custom events.
  const version = useVersion(project.id, "goals");
  const saved = useData<GoalsAnswer>(adhoc ? null : "/metrics/goals", base, `v${version}`);
  const savedGoals = saved.data?.saved ? saved.data.goals : [];
  const mode = adhoc
    ? "adhoc"
    : savedGoals.length > 0
      ? "saved"
      : saved.data || (saved.error && !saved.error.missing)
        ? "auto"
        : "loading";
  const events = useData<BreakdownAnswer>(mode === "auto" ? "/metrics/breakdown" : null, [
    ...base,
    ["by", "event"],
    ["limit", "11"],
    ["order", "-visitors"],
  ]);
  const auto = (events.data?.rows ?? [])
    .filter((r) => r.value !== "page_view" && r.value !== "exception")
    .slice(0, 5)
    .map((r) => `event:${r.value}`);
  const goals = adhoc ? view.goals : mode === "auto" ? auto : [];
  const params: Params = [...base, ...goals.map((g) => ["goal", g] as [string, string])];
  const listed = useData<GoalsAnswer>(goals.length ? "/metrics/goals" : null, params);
  const data = mode === "saved" ? saved : listed;
  const hidden = useHidden(listed.error, saved.error);
  if (hidden) return null;
  return (
    <Report
      id="goals"
      title="Goals"
      actions={
        <span class="head-actions">
          <button
            type="button"
            class="link small"
            data-testid="manage-goals"
            onClick={() => setManaging(true)}
          >
            Saved goals
          </button>
          <button
            type="button"
            class="link small"
            aria-expanded={editing}
            onClick={() => setEditing(!editing)}
          >
            {editing ? "Close" : "Edit goals"}
          </button>
        </span>
      }
    >
      {managing && <GoalsScreen onClose={() => setManaging(false)} />}
      {editing ? (
        <GoalEditor goals={goals} onDone={() => setEditing(false)} />
      ) : mode === "loading" ? (
        <Skeleton />
      ) : goals.length === 0 && mode !== "saved" ? (
        events.data || events.error ? (
          <Note>No goals yet: save goals with “Saved goals”, or try some with “Edit goals”.</Note>
        ) : (
          <Skeleton />
        )
      ) : (
        <Body data={data} empty={(d) => d.goals.length === 0}>
          {(d) => (
            <>
              {mode === "auto" && (
                <p class="hint">Your custom events; save the goals to follow with “Saved goals”.</p>
              )}
              {mode === "adhoc" && (
                <p class="hint">
                  Goals from this page's address.{" "}
                  <button type="button" class="link small" onClick={() => setView({ goals: [] })}>
                    Show the saved goals
                  </button>
                </p>
              )}
              <SimpleRows
                head={["Goal", "Uniques", "Total", "Conversion"]}
                rows={d.goals.map((g) => ({
                  key: g.id ?? g.goal,
                  label: g.name ?? goalLabel(g.goal),
                  nums: [num(g.visitors), num(g.events), rate(g.conversionRate)],
                  bar: g.visitors,
                  filter: goalFilter(g.goal),
                  also: g.property
                    ? [{ dim: `prop:${g.property.key}`, op: "is", value: g.property.value }]
                    : [],
                }))}
              />
            </>
          )}
        </Body>
      )}
    </Report>
  );
}

// --- funnels -----------------------------------------------------------------------------------

const WINDOWS: [string, string][] = [
  ["1800", "30 minutes"],
  ["3600", "1 hour"],
  ["86400", "1 day"],
  ["604800", "7 days"],
];

function FunnelEditor(props: { steps: string[]; window: string; onDone: () => void }): JSX.Element {
  const initial = props.steps.length >= 2 ? props.steps : ["page:/", "event:"];
  const [steps, setSteps] = useState(
    initial.map((s) => ({
      kind: s.startsWith("page:") ? "page" : "event",
      value: s.slice(s.indexOf(":") + 1),
    })),
  );
  const [win, setWin] = useState(props.window || "1800");
  const valid = steps.filter((s) => s.value.trim());
  const update = (i: number, patch: Partial<{ kind: string; value: string }>) =>
    setSteps(steps.map((s, j) => (j === i ? { ...s, ...patch } : s)));
  return (
    <form
      class="editor"
      onSubmit={(e) => {
        e.preventDefault();
        if (valid.length < 2) return;
        setView({
          steps: valid.map((s) => `${s.kind}:${s.value.trim()}`),
          window: win === "1800" ? "" : win,
          funnel: "",
        });
        props.onDone();
      }}
    >
      <ol class="edit-list steps">
        {steps.map((s, i) => (
          <li key={i} class="inline-form">
            <Field label={<>Step {i + 1}</>}>
              {(id) => (
                <>
                  <select
                    id={id}
                    value={s.kind}
                    onChange={(e) => update(i, { kind: (e.target as HTMLSelectElement).value })}
                  >
                    <option value="page">Page visit</option>
                    <option value="event">Event</option>
                  </select>
                </>
              )}
            </Field>
            <Field class="grow" label={<>{s.kind === "page" ? "Path (* matches anything)" : "Event name"}</>}>
              {(id) => (
                <>
                  <input
                    id={id}
                    value={s.value}
                    onInput={(e) => update(i, { value: (e.target as HTMLInputElement).value })}
                  />
                </>
              )}
            </Field>
            {steps.length > 2 && (
              <button
                type="button"
                class="link small"
                aria-label={`Remove step ${i + 1}`}
                onClick={() => setSteps(steps.filter((_, j) => j !== i))}
              >
                Remove
              </button>
            )}
          </li>
        ))}
      </ol>
      <div class="inline-form">
        {steps.length < 8 && (
          <button type="button" onClick={() => setSteps([...steps, { kind: "event", value: "" }])}>
            + Step
          </button>
        )}
        <Field label="Within">
          {(id) => (
            <>
              <select id={id} value={win} onChange={(e) => setWin((e.target as HTMLSelectElement).value)}>
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
      <div class="row-actions">
        <button type="button" onClick={props.onDone}>
          Cancel
        </button>
        <button type="submit" class="primary" disabled={valid.length < 2}>
          Show funnel
        </button>
      </div>
    </form>
  );
}

/** The funnel panel's choice: the funnel of the address (ad hoc) or a saved one. */
function FunnelPick(): JSX.Element | null {
  const { api, project } = useQuery();
  const view = useView();
  const funnels = useSaved<SavedFunnel>(api, project.id, "funnels");
  const list = funnels.items ?? [];
  if (list.length === 0 && !view.funnel) return null;
  return (
    <Field class="inline funnel-pick" label="Funnel">
      {(id) => (
        <>
          <select
            id={id}
            value={view.funnel}
            onChange={(e) => setView({ funnel: (e.target as HTMLSelectElement).value })}
          >
            <option value="">{view.steps.length >= 2 ? "This page's steps" : "Choose…"}</option>
            {list.map((f) => (
              <option key={f.id} value={f.id}>
                {f.name}
              </option>
            ))}
            {view.funnel && funnels.items && !list.some((f) => f.id === view.funnel) && (
              <option value={view.funnel}>(deleted funnel)</option>
            )}
          </select>
        </>
      )}
    </Field>
  );
}

export function FunnelPanel(): JSX.Element | null {
  const { base, project } = useQuery();
  const view = useView();
  const [editing, setEditing] = useState(false);
  const [managing, setManaging] = useState(false);
  const version = useVersion(project.id, "funnels");
  const steps = view.steps;
  const chosen = view.funnel;
  const params: Params = chosen
    ? [...base, ["funnel", chosen]]
    : [...base, ...steps.map((s) => ["step", s] as [string, string])];
  if (view.window && !chosen) params.push(["window", view.window]);
  const ready = !!chosen || steps.length >= 2;
  const data = useData<FunnelAnswer>(ready ? "/metrics/funnel" : null, params, `v${version}`);
  // A suggestion from the top pages and custom events (the same requests as their panels).
  const pages = useData<BreakdownAnswer>(ready ? null : "/metrics/breakdown", [
    ...base,
    ["by", "page"],
    ["limit", "10"],
    ["order", "-visitors"],
  ]);
  const events = useData<BreakdownAnswer>(ready ? null : "/metrics/breakdown", [
    ...base,
    ["by", "event"],
    ["limit", "11"],
    ["order", "-visitors"],
  ]);
  // A saved funnel that is gone answers 404: said in the panel, which stays.
  const hidden = useHidden(chosen ? null : data.error);
  if (hidden) return null;
  const suggestion = [
    ...(pages.data?.rows ?? []).slice(0, 2).map((r) => `page:${r.value}`),
    ...(events.data?.rows ?? [])
      .filter((r) => !["page_view", "exception"].includes(r.value))
      .slice(0, 1)
      .map((r) => `event:${r.value}`),
  ];
  const first = data.data?.steps[0]?.visitors ?? 0;
  return (
    <Report
      id="funnel"
      title="Funnel"
      actions={
        <span class="head-actions">
          <button
            type="button"
            class="link small"
            data-testid="manage-funnels"
            onClick={() => setManaging(true)}
          >
            Saved funnels
          </button>
          <button
            type="button"
            class="link small"
            aria-expanded={editing}
            onClick={() => setEditing(!editing)}
          >
            {editing ? "Close" : steps.length >= 2 && !chosen ? "Edit funnel" : "Set up"}
          </button>
        </span>
      }
    >
      {managing && (
        <FunnelsScreen steps={chosen ? [] : steps} window={view.window} onClose={() => setManaging(false)} />
      )}
      <FunnelPick />
      {editing ? (
        <FunnelEditor
          steps={chosen ? (data.data?.steps.map((s) => s.step) ?? []) : steps}
          window={view.window}
          onDone={() => setEditing(false)}
        />
      ) : !ready ? (
        <>
          <Note>
            Follow visitors through steps, for example the home page, then the pricing page, then a signup
            event. Choose the steps with “Set up”, or save funnels for the team with “Saved funnels”.
          </Note>
          {suggestion.length >= 2 && (
            <p class="hint">
              <button type="button" class="link" onClick={() => setView({ steps: suggestion, funnel: "" })}>
                Try {suggestion.map(goalLabel).join(" → ")}
              </button>
            </p>
          )}
        </>
      ) : chosen && data.error?.missing ? (
        <Note>This saved funnel does not exist any more: choose another.</Note>
      ) : (
        <Body data={data} empty={(d) => d.steps.length === 0}>
          {(d) => (
            <ol class="funnel" data-funnel={d.funnel?.id ?? ""}>
              {d.steps.map((s, i) => {
                const w = first ? (s.visitors / first) * 100 : 0;
                return (
                  <li key={i}>
                    <div class="funnel-label">
                      <span class="step-no">{i + 1}</span>
                      <span class="label">{stepLabel(s.step)}</span>
                      <span class="num">{exactNum(s.visitors)} visitors</span>
                    </div>
                    <div class="funnel-track" aria-hidden="true">
                      <div class="funnel-bar" style={{ width: `${Math.max(0.5, w).toFixed(1)}%` }} />
                    </div>
                    <div class="funnel-meta">
                      <span>{rate(s.conversionRate)} converted</span>
                      {i > 0 && (
                        <span class="muted">
                          {typeof s.dropOff === "number"
                            ? `${exactNum(s.dropOff)} dropped off`
                            : `${s.dropOff} dropped off`}
                        </span>
                      )}
                    </div>
                  </li>
                );
              })}
            </ol>
          )}
        </Body>
      )}
    </Report>
  );
}

// --- revenue -----------------------------------------------------------------------------------

export function RevenuePanel(): JSX.Element | null {
  const { base } = useQuery();
  const data = useData<RevenueAnswer>("/metrics/revenue", base);
  const hidden = useHidden(data.error);
  if (hidden) return null;
  return (
    <Report id="revenue" title="Revenue">
      <Body
        data={data}
        empty={(d) => d.currencies.length === 0}
        emptyText="No purchases in this range. Send purchase events (the client's purchase()) to see revenue."
      >
        {(d) => (
          <>
            <ul class="plain figures">
              {d.currencies.map((c) => (
                <li key={c.currency} class="figure">
                  <span class="figure-value">{money(c.revenue, c.currency)}</span>
                  <span class="figure-label">
                    {exactNum(c.orders)} order{c.orders === 1 ? "" : "s"} ·{" "}
                    {money(c.averageOrderValue, c.currency)} average
                  </span>
                </li>
              ))}
            </ul>
            {d.topItems.length > 0 && (
              <SimpleRows
                head={["Item", "Quantity", "Revenue", "Currency"]}
                rows={d.topItems.slice(0, 8).map((it) => ({
                  key: `${it.itemId}/${it.currency}`,
                  label: it.itemName || it.itemId,
                  title: it.itemName ? `${it.itemName} (${it.itemId})` : it.itemId,
                  nums: [num(it.quantity), money(it.revenue, it.currency), it.currency],
                  bar: it.revenue,
                  filter: null,
                }))}
              />
            )}
          </>
        )}
      </Body>
    </Report>
  );
}

// --- errors ------------------------------------------------------------------------------------

export function ErrorsPanel(): JSX.Element | null {
  const { base } = useQuery();
  const data = useData<ErrorsAnswer>("/metrics/errors", base);
  const hidden = useHidden(data.error);
  if (hidden) return null;
  return (
    <Report id="errors" title="Errors">
      <Body data={data} empty={(d) => d.errors === 0} emptyText="No errors reported in this range.">
        {(d) => (
          <>
            <ul class="plain figures">
              <li class="figure">
                <span class="figure-value">{num(d.errors)}</span>
                <span class="figure-label">errors</span>
              </li>
              <li class="figure">
                <span class="figure-value">{num(d.fatal)}</span>
                <span class="figure-label">
                  fatal (
                  {typeof d.fatalShare === "string" ? d.fatalShare : pct(percentValue(d.fatalShare, true))})
                </span>
              </li>
            </ul>
            <div class="split">
              {d.top.length > 0 && (
                <SimpleRows
                  head={["Error", "Count"]}
                  rows={d.top.slice(0, 6).map((e) => ({
                    key: e.description,
                    label: e.description || "(no description)",
                    nums: [num(e.count)],
                    bar: e.count,
                    filter: { dim: "prop:description", op: "is", value: e.description },
                  }))}
                />
              )}
              {d.pages.length > 0 && (
                <SimpleRows
                  head={["Page with errors", "Count"]}
                  rows={d.pages.slice(0, 6).map((p) => ({
                    key: p.value,
                    label: p.value,
                    nums: [num(p.count)],
                    bar: p.count,
                    filter: { dim: "page", op: "is", value: p.value },
                  }))}
                />
              )}
            </div>
          </>
        )}
      </Body>
    </Report>
  );
}
