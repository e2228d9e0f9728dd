// "3 current visitors": distinct visitors of the last minutes, polled while the page is visible.

import type { JSX } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError } from "./api";
import { scoped, useQuery } from "./context";
import { num } from "./format";
import type { RealtimeAnswer } from "./types";

const EVERY_MS = 15_000;

export function Realtime(): JSX.Element | null {
  const { api, project } = useQuery();
  const [data, setData] = useState<RealtimeAnswer | null>(null);
  const [missing, setMissing] = useState(false);
  const [open, setOpen] = useState(false);
  const box = useRef<HTMLDivElement>(null);

  useEffect(() => {
    let stopped = false;
    let timer = 0;
    setData(null);
    const poll = async () => {
      if (document.visibilityState === "visible") {
        try {
          const r = await api.get<RealtimeAnswer>("/metrics/realtime", scoped(api, project, []), true);
          if (!stopped) setData(r);
        } catch (e) {
          if (e instanceof ApiError && e.missing) {
            if (!stopped) setMissing(true);
            return;
          }
        }
      }
      if (!stopped) timer = window.setTimeout(poll, EVERY_MS);
    };
    void poll();
    const wake = () => {
      if (document.visibilityState === "visible") {
        clearTimeout(timer);
        void poll();
      }
    };
    document.addEventListener("visibilitychange", wake);
    return () => {
      stopped = true;
      clearTimeout(timer);
      document.removeEventListener("visibilitychange", wake);
    };
  }, [project.id]);

  useEffect(() => {
    if (!open) return;
    const close = (e: Event) => {
      if (e instanceof KeyboardEvent ? e.key === "Escape" : !box.current?.contains(e.target as Node)) {
        setOpen(false);
      }
    };
    document.addEventListener("keydown", close);
    document.addEventListener("pointerdown", close);
    return () => {
      document.removeEventListener("keydown", close);
      document.removeEventListener("pointerdown", close);
    };
  }, [open]);

  if (missing) return null;
  const n = data?.visitors;
  const label = n === undefined ? "… current visitors" : `${num(n)} current visitor${n === 1 ? "" : "s"}`;
  return (
    <div class="realtime" ref={box}>
      <button
        type="button"
        class="realtime-btn"
        aria-expanded={open}
        aria-controls="realtime-pages"
        data-testid="realtime"
        data-value={n ?? ""}
        onClick={() => setOpen(!open)}
      >
        <span class={n ? "pulse on" : "pulse"} aria-hidden="true" />
        {label}
      </button>
      {open && (
        <div id="realtime-pages" class="popover" role="region" aria-label="Pages viewed right now">
          <h2 class="popover-title">Right now (last 5 minutes)</h2>
          {data && data.pages.length > 0 ? (
            <ul class="plain">
              {data.pages.slice(0, 10).map((p) => (
                <li key={p.value}>
                  <span class="label">{p.value}</span>
                  <span class="num">{num(p.visitors)}</span>
                </li>
              ))}
            </ul>
          ) : (
            <p class="note">Nobody is on the site right now.</p>
          )}
        </div>
      )}
    </div>
  );
}
