// The world map of the Locations panel, loaded on first use (its own chunk). Country shapes are
// Natural Earth's (public domain) via world-atlas, projected at build time (scripts/make-map.mjs).

import type { JSX } from "preact";
import { useState } from "preact/hooks";
import world from "../.cache/world.json";
import { useData, useQuery } from "./context";
import { withFilter } from "./filters";
import { countryName, exactNum, num } from "./format";
import { setView, useView } from "./state";
import type { BreakdownAnswer } from "./types";
import { Note, Skeleton } from "./ui";

const shapes = world as { width: number; height: number; paths: Record<string, string> };

export function WorldMap(): JSX.Element {
  const { base } = useQuery();
  const view = useView();
  const data = useData<BreakdownAnswer>("/metrics/breakdown", [
    ...base,
    ["by", "country"],
    ["limit", "300"],
    ["order", "-visitors"],
  ]);
  const [hover, setHover] = useState<{ code: string; x: number; y: number } | null>(null);
  if (data.error) return <Note error={data.error} />;
  if (!data.data) return <Skeleton rows={6} />;
  const counts = new Map<string, number>();
  for (const r of data.data.rows) if (r.value) counts.set(r.value.toUpperCase(), r.visitors);
  const max = Math.max(1, ...counts.values());
  const pick = (code: string) =>
    setView({ filters: withFilter(view.filters, { dim: "country", op: "is", value: code }) });
  const show = (code: string, e: { clientX: number; clientY: number }, el: Element) => {
    const box = el.closest(".map")?.getBoundingClientRect();
    if (box) setHover({ code, x: e.clientX - box.left, y: e.clientY - box.top });
  };
  return (
    <div class={data.loading ? "map loading" : "map"}>
      <svg
        viewBox={`0 0 ${shapes.width} ${shapes.height}`}
        role="group"
        aria-label={`World map: visitors in ${counts.size} ${counts.size === 1 ? "country" : "countries"}`}
        onPointerLeave={() => setHover(null)}
      >
        {Object.entries(shapes.paths).map(([code, d]) => {
          const n = counts.get(code) ?? 0;
          if (!n) return <path key={code} d={d} class="land" />;
          const level = Math.ceil(Math.sqrt(n / max) * 5);
          const name = countryName(code);
          return (
            <path
              key={code}
              d={d}
              class={`land c${level}`}
              tabIndex={0}
              role="button"
              aria-label={`${name}: ${exactNum(n)} visitors. Filter the page by ${name}`}
              onPointerMove={(e) => show(code, e, e.currentTarget)}
              onFocus={(e) => {
                const r = (e.currentTarget as SVGPathElement).getBoundingClientRect();
                show(code, { clientX: r.left + r.width / 2, clientY: r.top + r.height / 2 }, e.currentTarget);
              }}
              onBlur={() => setHover(null)}
              onClick={() => pick(code)}
              onKeyDown={(e) => {
                if (e.key === "Enter" || e.key === " ") {
                  e.preventDefault();
                  pick(code);
                }
              }}
            />
          );
        })}
      </svg>
      {hover && (
        <div class="tooltip map-tip" style={{ left: `${hover.x}px`, top: `${hover.y}px` }} aria-hidden="true">
          <div class="tt-time">{countryName(hover.code)}</div>
          <div class="tt-value">{num(counts.get(hover.code) ?? 0)} visitors</div>
        </div>
      )}
      <div class="legend" aria-hidden="true">
        <span>fewer</span>
        {[1, 2, 3, 4, 5].map((l) => (
          <i key={l} class={`c${l}`} />
        ))}
        <span>more visitors</span>
      </div>
    </div>
  );
}
