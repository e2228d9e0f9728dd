// Email reports and traffic alerts: who gets which, for the project shown; add and remove.
// Hidden for read-only views and for credentials that may not manage them (403), or on a
// server without these routes (404). Says when mail is off (no SVC_SMTP_URL).

import type { JSX } from "preact";
import { useEffect, useState } from "preact/hooks";
import { ApiError } from "./api";
import { useQuery } from "./context";
import { Report } from "./reports";
import { Field } from "./ui";

interface Subscription {
  id: string;
  email: string;
  kind: string;
}

interface SubscriptionsAnswer {
  subscriptions: Subscription[];
  mailEnabled: boolean;
}

const KINDS: [string, string][] = [
  ["weekly", "Weekly report"],
  ["monthly", "Monthly report"],
  ["daily", "Daily report"],
  ["alerts", "Alerts (traffic and goals)"],
];

function kindLabel(kind: string): string {
  return KINDS.find(([k]) => k === kind)?.[1] ?? kind;
}

export function SubscriptionsPanel(): JSX.Element | null {
  const { api, project, readOnly } = useQuery();
  const [answer, setAnswer] = useState<SubscriptionsAnswer | null>(null);
  const [hidden, setHidden] = useState(false);
  const [error, setError] = useState("");
  const [email, setEmail] = useState("");
  const [kind, setKind] = useState("weekly");
  const [busy, setBusy] = useState(false);
  const base = `/projects/${encodeURIComponent(project.id)}/subscriptions`;

  const load = async () => {
    try {
      setAnswer(await api.send<SubscriptionsAnswer>("GET", base));
    } catch (e) {
      if (e instanceof ApiError && (e.status === 403 || e.status === 404)) setHidden(true);
      else setError(e instanceof ApiError ? e.message : String(e));
    }
  };
  useEffect(() => {
    if (!readOnly) void load();
  }, [project.id, readOnly]);

  if (readOnly || hidden) return null;

  const add = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError("");
    try {
      await api.send("POST", base, { email: email.trim(), kind });
      setEmail("");
      await load();
    } catch (err) {
      setError(err instanceof ApiError ? err.message : String(err));
    } finally {
      setBusy(false);
    }
  };
  const remove = async (id: string) => {
    setError("");
    try {
      await api.send("DELETE", `${base}/${encodeURIComponent(id)}`);
      await load();
    } catch (err) {
      setError(err instanceof ApiError ? err.message : String(err));
    }
  };

  const subs = answer?.subscriptions ?? [];
  return (
    <Report id="subscriptions" title="Email reports and alerts">
      {answer && !answer.mailEnabled && (
        <p class="note" data-testid="mail-off">
          Mail is off on this server (no SMTP server is set): subscriptions are kept and their mail waits
          until it is set.
        </p>
      )}
      {subs.length ? (
        <ul class="plain edit-list" aria-label="Subscriptions">
          {subs.map((s) => (
            <li key={s.id} data-subscription={s.id}>
              <span>
                {s.email}: {kindLabel(s.kind)}
              </span>
              <button
                type="button"
                class="link small"
                aria-label={`Remove ${kindLabel(s.kind)} for ${s.email}`}
                onClick={() => void remove(s.id)}
              >
                Remove
              </button>
            </li>
          ))}
        </ul>
      ) : (
        answer && <p class="note">No one gets reports or alerts of this project yet.</p>
      )}
      <form class="inline-form" onSubmit={add}>
        <Field class="grow" label="Email address">
          {(id) => (
            <input
              id={id}
              type="email"
              required
              autocomplete="email"
              value={email}
              onInput={(e) => setEmail((e.target as HTMLInputElement).value)}
            />
          )}
        </Field>
        <Field label="What">
          {(id) => (
            <select id={id} value={kind} onChange={(e) => setKind((e.target as HTMLSelectElement).value)}>
              {KINDS.map(([k, label]) => (
                <option key={k} value={k}>
                  {label}
                </option>
              ))}
            </select>
          )}
        </Field>
        <button type="submit" disabled={busy}>
          Subscribe
        </button>
      </form>
      {error && (
        <p class="note error" role="alert">
          {error}
        </p>
      )}
    </Report>
  );
}
