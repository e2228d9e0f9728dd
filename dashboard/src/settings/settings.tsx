// A project's settings (GET and PATCH /projects/{id}): its time zone and domains, the addresses
// and paths whose events are dropped, its retention, its keys and share links, and its
// deletion. Shown to those who may manage the project (settings/rights.ts); each part that
// needs more (deletion: owner; retention: the admin token) says so instead of offering it.

import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import { useQuery } from "../context";
import { exactNum } from "../format";
import { Field, Modal, Note, Tabs } from "../ui";
import { DeleteProject } from "./delete";
import { errorText, lines } from "./forms";
import { KeysSection, ShareLinksSection } from "./keys";
import { canDelete, canSetRetention } from "./rights";
import "../screens.css";

/** GET /projects/{id}: the whole record, as a manager reads it. */
export interface ProjectRecord {
  id: string;
  name: string;
  timezone: string;
  domains: string[];
  plan?: string;
  options: Record<string, unknown>;
  createdAt?: string;
  updatedAt?: string;
  usage?: { month: string; events: number; quota: number | null };
}

function strings(v: unknown): string[] {
  return Array.isArray(v) ? v.filter((x): x is string => typeof x === "string") : [];
}

type Section = "general" | "exclusions" | "keys" | "share" | "delete";

export function SettingsDialog(props: { onClose: () => void; onChanged: () => void }): JSX.Element {
  const { api, project } = useQuery();
  const [record, setRecord] = useState<ProjectRecord | null>(null);
  const [error, setError] = useState("");
  const [section, setSection] = useState<Section>("general");
  const path = `/projects/${encodeURIComponent(project.id)}`;

  useEffect(() => {
    api.send<ProjectRecord>("GET", path).then(setRecord, (e: unknown) => setError(errorText(e)));
  }, [project.id]);

  /** PATCH the project; the record answered replaces the one shown. */
  const save = async (changes: Record<string, unknown>): Promise<void> => {
    const r = await api.send<ProjectRecord>("PATCH", path, changes);
    setRecord(r);
    if ("timezone" in changes) props.onChanged();
  };

  const tabs = [
    { id: "general", label: "General" },
    { id: "exclusions", label: "Exclusions" },
    { id: "keys", label: "Keys" },
    { id: "share", label: "Share links" },
    { id: "delete", label: "Delete" },
  ];
  return (
    <Modal title={`Settings of ${project.name}`} onClose={props.onClose} wide>
      <div data-testid="settings">
        <Tabs
          label="Settings"
          tabs={tabs}
          value={section}
          controls="settings-section"
          onChange={(id) => setSection(id as Section)}
        />
        <div id="settings-section" role="tabpanel" class="settings-section">
          {error ? (
            <p class="note error" role="alert">
              Could not load the settings: {error}
            </p>
          ) : !record ? (
            <Note>Loading…</Note>
          ) : section === "general" ? (
            <General record={record} save={save} />
          ) : section === "exclusions" ? (
            <Exclusions record={record} save={save} />
          ) : section === "keys" ? (
            <KeysSection path={path} />
          ) : section === "share" ? (
            <ShareLinksSection path={path} />
          ) : canDelete(api, project) ? (
            <DeleteProject path={path} name={record.name} onDeleted={props.onChanged} />
          ) : (
            <p class="note" data-testid="delete-refused">
              Only an owner of the project's team (or the operator, with the admin token) may delete it.
            </p>
          )}
        </div>
      </div>
    </Modal>
  );
}

/** A form's save button and what came of it: "Saved", or the API's error (naming the field). */
function useSaving(): {
  busy: boolean;
  status: JSX.Element;
  run: (work: () => Promise<void>) => Promise<void>;
} {
  const [busy, setBusy] = useState(false);
  const [done, setDone] = useState("");
  const [error, setError] = useState("");
  const run = async (work: () => Promise<void>) => {
    setBusy(true);
    setDone("");
    setError("");
    try {
      await work();
      setDone("Saved.");
    } catch (e) {
      setError(errorText(e));
    } finally {
      setBusy(false);
    }
  };
  const status = (
    <>
      <p class="sr-only" role="status">
        {done}
      </p>
      {done && (
        <p class="note ok" aria-hidden="true">
          {done}
        </p>
      )}
      {error && (
        <p class="note error" role="alert">
          {error}
        </p>
      )}
    </>
  );
  return { busy, status, run };
}

function zones(): string[] {
  const intl = Intl as unknown as { supportedValuesOf?: (k: string) => string[] };
  try {
    return intl.supportedValuesOf?.("timeZone") ?? [];
  } catch {
    return [];
  }
}

function General(props: {
  record: ProjectRecord;
  save: (c: Record<string, unknown>) => Promise<void>;
}): JSX.Element {
  const { api } = useQuery();
  const { record } = props;
  const [tz, setTz] = useState(record.timezone);
  const [domains, setDomains] = useState(record.domains.join("\n"));
  const { busy, status, run } = useSaving();
  const known = zones();
  const list = known.includes(record.timezone) || !known.length ? known : [record.timezone, ...known];
  return (
    <div class="stack">
      <form
        class="stack settings-form"
        onSubmit={(e) => {
          e.preventDefault();
          void run(() => props.save({ timezone: tz.trim(), domains: lines(domains) }));
        }}
      >
        <Field label="Time zone (days and hours are counted in it)">
          {(id) =>
            list.length ? (
              <select id={id} value={tz} onChange={(e) => setTz((e.target as HTMLSelectElement).value)}>
                {list.map((z) => (
                  <option key={z} value={z}>
                    {z}
                  </option>
                ))}
              </select>
            ) : (
              <input id={id} value={tz} onInput={(e) => setTz((e.target as HTMLInputElement).value)} />
            )
          }
        </Field>
        <Field label="Domains (one host name a line, at most 100)">
          {(id) => (
            <textarea
              id={id}
              rows={4}
              spellcheck={false}
              value={domains}
              onInput={(e) => setDomains((e.target as HTMLTextAreaElement).value)}
            />
          )}
        </Field>
        <div class="row-actions">
          <button type="submit" class="primary" disabled={busy}>
            Save
          </button>
        </div>
        {status}
      </form>
      <Retention record={record} save={props.save} editable={canSetRetention(api)} />
      <dl class="facts">
        <dt>Project id</dt>
        <dd>
          <code>{record.id}</code>
        </dd>
        {record.plan && (
          <>
            <dt>Plan</dt>
            <dd>{record.plan}</dd>
          </>
        )}
        {record.usage && (
          <>
            <dt>Events this month ({record.usage.month})</dt>
            <dd data-testid="usage">
              {exactNum(record.usage.events)}
              {record.usage.quota ? ` of ${exactNum(record.usage.quota)}` : ""}
            </dd>
          </>
        )}
      </dl>
    </div>
  );
}

function monthsText(v: unknown): string {
  if (typeof v !== "number") return "the service's default";
  return v === 0 ? "forever" : `${v} month${v === 1 ? "" : "s"}`;
}

/** The months raw events and daily rollups are kept (options.retentionMonths and
 * rollupRetentionMonths): the admin token changes them, others read them. */
function Retention(props: {
  record: ProjectRecord;
  save: (c: Record<string, unknown>) => Promise<void>;
  editable: boolean;
}): JSX.Element {
  const o = props.record.options;
  const [raw, setRaw] = useState(typeof o.retentionMonths === "number" ? String(o.retentionMonths) : "");
  const [rolled, setRolled] = useState(
    typeof o.rollupRetentionMonths === "number" ? String(o.rollupRetentionMonths) : "",
  );
  const { busy, status, run } = useSaving();
  const months = (s: string): number | null => (s.trim() === "" ? null : Number(s));
  if (!props.editable) {
    return (
      <section class="stack" aria-labelledby="retention-title">
        <h3 id="retention-title">Retention</h3>
        <p data-testid="retention">
          Raw events are kept {monthsText(o.retentionMonths)}, daily rollups{" "}
          {monthsText(o.rollupRetentionMonths)}. Only the operator (with the admin token) changes them.
        </p>
      </section>
    );
  }
  return (
    <form
      class="stack settings-form"
      aria-labelledby="retention-title"
      onSubmit={(e) => {
        e.preventDefault();
        const options = {
          ...props.record.options,
          retentionMonths: months(raw),
          rollupRetentionMonths: months(rolled),
        };
        void run(() => props.save({ options }));
      }}
    >
      <h3 id="retention-title">Retention</h3>
      <p class="hint">
        Whole months kept besides the current one; 0 keeps them forever, empty follows the service's default.
        Raw events past it are deleted (every day is rolled up first).
      </p>
      <div class="inline-form">
        <Field label="Raw events (months)">
          {(id) => (
            <input
              id={id}
              type="number"
              min={0}
              max={1200}
              value={raw}
              onInput={(e) => setRaw((e.target as HTMLInputElement).value)}
            />
          )}
        </Field>
        <Field label="Daily rollups (months)">
          {(id) => (
            <input
              id={id}
              type="number"
              min={0}
              max={1200}
              value={rolled}
              onInput={(e) => setRolled((e.target as HTMLInputElement).value)}
            />
          )}
        </Field>
        <button type="submit" disabled={busy}>
          Save retention
        </button>
      </div>
      {status}
    </form>
  );
}

function Exclusions(props: {
  record: ProjectRecord;
  save: (c: Record<string, unknown>) => Promise<void>;
}): JSX.Element {
  const o = props.record.options;
  const [addresses, setAddresses] = useState(strings(o.excludeAddresses).join("\n"));
  const [paths, setPaths] = useState(strings(o.excludePaths).join("\n"));
  const [own, setOwn] = useState(o.onlyOwnDomains === true);
  const [keepDc, setKeepDc] = useState(o.keepDataCentres === true);
  const { busy, status, run } = useSaving();
  return (
    <form
      class="stack settings-form"
      onSubmit={(e) => {
        e.preventDefault();
        // `options` replaces the project's options (but its retention and quota): send the
        // others back as read
        const options = {
          ...props.record.options,
          excludeAddresses: lines(addresses),
          excludePaths: lines(paths),
          onlyOwnDomains: own,
          keepDataCentres: keepDc,
        };
        void run(() => props.save({ options }));
      }}
    >
      <p>Events matching these are dropped when they arrive (counted under Dropped events, never stored).</p>
      <Field label="Excluded addresses (one CIDR a line, as 10.0.0.0/8 or 2001:db8::/32)">
        {(id) => (
          <textarea
            id={id}
            rows={4}
            spellcheck={false}
            value={addresses}
            onInput={(e) => setAddresses((e.target as HTMLTextAreaElement).value)}
          />
        )}
      </Field>
      <Field label="Excluded paths (one a line, * ? [...] as wildcards: /admin/*)">
        {(id) => (
          <textarea
            id={id}
            rows={4}
            spellcheck={false}
            value={paths}
            onInput={(e) => setPaths((e.target as HTMLTextAreaElement).value)}
          />
        )}
      </Field>
      <label class="check">
        <input
          type="checkbox"
          checked={own}
          onChange={(e) => setOwn((e.target as HTMLInputElement).checked)}
        />
        Only the project's own domains (drop events from other host names)
      </label>
      <label class="check">
        <input
          type="checkbox"
          checked={keepDc}
          onChange={(e) => setKeepDc((e.target as HTMLInputElement).checked)}
        />
        Keep events from data-centre addresses (dropped when the operator configured a list of them)
      </label>
      <div class="row-actions">
        <button type="submit" class="primary" disabled={busy}>
          Save exclusions
        </button>
      </div>
      {status}
    </form>
  );
}
