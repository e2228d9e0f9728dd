// Journeys (GET /metrics/journeys): from a page (or the sessions' entry), the most common next
// pages, or the previous ones, 1 to 3 steps deep, with the visitors of each path and how many
// left at each step. Shown as ranked paths (each page with its visitors and drop-off), or as a
// table of the same figures.

import type { JSX } from "preact";
import { useState } from "preact/hooks";
import type { Params } from "./api";
import { useData, useQuery } from "./context";
import { exactNum, num } from "./format";
import { Body, useHidden } from "./reports";
import type { BreakdownAnswer } from "./types";
import { Field, Tabs } from "./ui";
import "./screens.css";

interface JourneyStep {
  page: string;
  visitors: number;
  dropOff: number;
  dropOffRate: string;
}

interface JourneyPath {
  pages: string[];
  visitors: number;
  steps: JourneyStep[];
}

export interface JourneysAnswer {
  page: string | null;
  direction: "next" | "previous";
  depth: number;
  visitors: number;
  dropOff: number;
  dropOffRate: string;
  paths: JourneyPath[];
}

/** The choice of "from the entry" (or "back from the exit") in the page picker. */
const ENDS = "";
/** The choice of a page typed by hand (no path holds a NUL). */
const OTHER = "\u0000other";

function pageName(page: string): string {
  return page === "" ? "(no path)" : page;
}

export function JourneysPanel(): JSX.Element | null {
  const { base } = useQuery();
  const [page, setPage] = useState(ENDS);
  const [direction, setDirection] = useState<"next" | "previous">("next");
  const [depth, setDepth] = useState("2");
  const [shape, setShape] = useState("paths");
  const [typing, setTyping] = useState(false);
  const [typed, setTyped] = useState("");
  // the same request as the Pages panel's top pages (one answer for both)
  const top = useData<BreakdownAnswer>("/metrics/breakdown", [
    ...base,
    ["by", "page"],
    ["limit", "10"],
    ["order", "-visitors"],
  ]);
  const params: Params = [...base, ["direction", direction], ["depth", depth], ["limit", "10"]];
  if (page !== ENDS) params.push(["page", page]);
  const data = useData<JourneysAnswer>("/metrics/journeys", params);
  if (useHidden(data.error)) return null;
  const pages = (top.data?.rows ?? []).map((r) => r.value);
  if (page !== ENDS && !pages.includes(page)) pages.unshift(page);
  const next = direction === "next";
  return (
    <section class="card panel wide" aria-labelledby="report-journeys" data-panel="journeys">
      <div class="card-head">
        <h2 id="report-journeys">Journeys</h2>
        <Tabs
          label="Journeys: shown as"
          tabs={[
            { id: "paths", label: "Paths" },
            { id: "table", label: "Table" },
          ]}
          value={shape}
          controls="journeys-body"
          onChange={setShape}
        />
      </div>
      <div id="journeys-body" role="tabpanel" class="panel-body">
        <div class="inline-form journey-pick">
          <Field label="Pages">
            {(id) => (
              <select
                id={id}
                value={direction}
                onChange={(e) => setDirection((e.target as HTMLSelectElement).value as "next" | "previous")}
              >
                <option value="next">after</option>
                <option value="previous">before</option>
              </select>
            )}
          </Field>
          <Field label="Page">
            {(id) => (
              <select
                id={id}
                value={typing ? OTHER : page}
                onChange={(e) => {
                  const v = (e.target as HTMLSelectElement).value;
                  setTyping(v === OTHER);
                  if (v !== OTHER) setPage(v);
                }}
              >
                <option value={ENDS}>{next ? "the entry page" : "the exit page"}</option>
                {pages.map((p) => (
                  <option key={p} value={p}>
                    {pageName(p)}
                  </option>
                ))}
                <option value={OTHER}>another page…</option>
              </select>
            )}
          </Field>
          <Field label="Steps">
            {(id) => (
              <select id={id} value={depth} onChange={(e) => setDepth((e.target as HTMLSelectElement).value)}>
                <option value="1">1</option>
                <option value="2">2</option>
                <option value="3">3</option>
              </select>
            )}
          </Field>
        </div>
        {typing && (
          <form
            class="inline-form journey-pick"
            onSubmit={(e) => {
              e.preventDefault();
              const path = typed.trim();
              if (!path) return;
              setPage(path);
              setTyping(false);
            }}
          >
            <Field class="grow" label="Path, as stored (/pricing)">
              {(id) => (
                <input
                  id={id}
                  value={typed}
                  spellcheck={false}
                  maxLength={2048}
                  onInput={(e) => setTyped((e.target as HTMLInputElement).value)}
                />
              )}
            </Field>
            <button type="submit">Show</button>
          </form>
        )}
        <Body
          data={data}
          empty={(d) => d.visitors === 0}
          emptyText={
            page === ENDS
              ? "No page views in this range."
              : `No visitor viewed ${page} in this range (journeys read the raw events).`
          }
        >
          {(d) => (
            <>
              <p class="hint" data-testid="journeys-summary">
                {summary(d, page)}
              </p>
              {d.paths.length === 0 ? (
                <p class="note">
                  No visitor went {next ? "on to another page" : "there from another page"}: every one{" "}
                  {next ? "left" : "entered"} there.
                </p>
              ) : shape === "paths" ? (
                <Paths answer={d} />
              ) : (
                <PathTable answer={d} />
              )}
            </>
          )}
        </Body>
      </div>
    </section>
  );
}

function summary(d: JourneysAnswer, page: string): string {
  const who = `${exactNum(d.visitors)} visitor${d.visitors === 1 ? "" : "s"}`;
  if (d.direction === "next") {
    const where = page === ENDS ? "entered the site" : `viewed ${page}`;
    return `${who} ${where}; ${exactNum(d.dropOff)} (${d.dropOffRate}) left without another page.`;
  }
  const where = page === ENDS ? "left the site" : `viewed ${page}`;
  return `${who} ${where}; ${exactNum(d.dropOff)} (${d.dropOffRate}) had no page before it.`;
}

/** Each path a line of its pages, each page with the visitors who reached it along the path
 * and how many of them left there; a bar for the path's visitors. */
function Paths(props: { answer: JourneysAnswer }): JSX.Element {
  const max = Math.max(1, ...props.answer.paths.map((p) => p.visitors));
  const next = props.answer.direction === "next";
  return (
    <ol class="plain journeys" aria-label="Most common paths">
      {props.answer.paths.map((p, i) => (
        <li key={p.pages.join("\n")} class="journey" data-path={p.pages.join(" → ")}>
          <div class="journey-head">
            <span class="step-no">{i + 1}</span>
            <span class="journey-bar" aria-hidden="true">
              <span style={{ width: `${Math.max(1, (p.visitors / max) * 100).toFixed(1)}%` }} />
            </span>
            <span class="num" data-testid="path-visitors">
              {exactNum(p.visitors)}
              <span class="sr-only"> visitors took this path</span>
            </span>
          </div>
          <ol class="plain journey-steps">
            {p.steps.map((s, j) => (
              <li key={j} class="journey-step" data-page={s.page}>
                <span class="journey-page" title={s.page}>
                  {pageName(s.page)}
                </span>
                <span class="journey-figures">
                  <span data-testid="step-visitors">{exactNum(s.visitors)}</span> visitor
                  {s.visitors === 1 ? "" : "s"} · <span data-testid="step-drop">{exactNum(s.dropOff)}</span>{" "}
                  {next ? "left" : "entered"} ({s.dropOffRate})
                </span>
              </li>
            ))}
          </ol>
        </li>
      ))}
    </ol>
  );
}

function PathTable(props: { answer: JourneysAnswer }): JSX.Element {
  const next = props.answer.direction === "next";
  return (
    <div class="table-wrap" tabIndex={0} role="region" aria-label="Most common paths">
      <table class="details" data-testid="journeys-table">
        <caption class="sr-only">
          Most common paths, with the visitors of each and, for each page, the visitors who reached it and how
          many {next ? "left the site" : "entered the site"} there
        </caption>
        <thead>
          <tr>
            <th scope="col">#</th>
            <th scope="col">Path</th>
            <th scope="col" class="num">
              Visitors
            </th>
            <th scope="col">Each page: visitors, {next ? "left" : "entered"} there</th>
          </tr>
        </thead>
        <tbody>
          {props.answer.paths.map((p, i) => (
            <tr key={p.pages.join("\n")}>
              <td class="num">{i + 1}</td>
              <th scope="row" class="cell">
                {p.pages.map(pageName).join(" → ")}
              </th>
              <td class="num">{num(p.visitors)}</td>
              <td>
                {p.steps
                  .map(
                    (s) =>
                      `${pageName(s.page)}: ${exactNum(s.visitors)}, ${exactNum(s.dropOff)} (${s.dropOffRate})`,
                  )
                  .join("; ")}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
