// The page: sign-in, the project, the date range and filters, and every panel below them.

import type { JSX } from "preact";
import { useEffect, useMemo, useState } from "preact/hooks";
import {
  AccountDialog,
  clearHash,
  InvitePage,
  ResetPage,
  TeamDialog,
  tokenFromHash,
  may,
  roleLabel,
  type Me,
} from "./accounts";
import { Api, ApiError, type Params } from "./api";
import { Chart } from "./chart";
import { PersonSignIn } from "./sso";
import { Query, scoped, useLoad, type Ctx } from "./context";
import {
  addDays,
  defaultInterval,
  intervalsFor,
  isDay,
  PERIODS,
  rangeLabel,
  rangeOf,
  todayIn,
  type Period,
} from "./dates";
import { FilterBar } from "./filterbar";
import { DevicesPanel, EventsPanel, LocationsPanel, PagesPanel, SourcesPanel } from "./panels";
import { EngagementPanel, LinksPanel, VitalsPanel } from "./measurements";
import { ErrorsPanel, FunnelPanel, GoalsPanel, RevenuePanel } from "./reports";
import { SubscriptionsPanel } from "./subscriptions";
import { ALL_PROJECTS, Overview } from "./overview";
import { Realtime } from "./realtime";
import { ShareDialog } from "./share";
import { DroppedPanel } from "./dropped";
import { JourneysPanel } from "./journeys";
import { SettingsButton } from "./settings/button";
import { Field } from "./ui";
import { setView, useView, type Compare } from "./state";
import { TopStats } from "./stats";
import type { MetricsAnswer, Project } from "./types";

const STORE_KEY = "svc.dashboard.key";

export interface Session {
  api: Api;
  projects: Project[];
  readOnly: boolean;
  /** The signed-in account (a session token), else null. */
  me: Me | null;
}

function projectFrom(m: MetricsAnswer): Project {
  return { id: m.projectId, name: m.projectId.replace(/^svc_proj_/, ""), timezone: m.timezone };
}

/** Reads the project (id, time zone) a read-only key or share token belongs to. */
async function probe(api: Api): Promise<Project> {
  const yesterday = addDays(new Date().toISOString().slice(0, 10), -1);
  return projectFrom(await api.get<MetricsAnswer>("/metrics", [["from", yesterday]]));
}

export async function openSession(token: string): Promise<Session> {
  const api = new Api(token);
  if (api.kind === "share") return { api, projects: [await probe(api)], readOnly: true, me: null };
  if (api.kind === "session") {
    const [r, me] = await Promise.all([
      api.get<{ projects: Project[] }>("/projects"),
      api.send<Me>("GET", "/account"),
    ]);
    return { api, projects: r.projects, readOnly: false, me };
  }
  try {
    const r = await api.get<{ projects: Project[] }>("/projects");
    return { api, projects: r.projects, readOnly: false, me: null };
  } catch (e) {
    if (!(e instanceof ApiError) || e.status !== 403) throw e;
  }
  try {
    return { api, projects: [await probe(api)], readOnly: true, me: null };
  } catch (e) {
    if (e instanceof ApiError && e.status === 403) {
      throw new ApiError(
        403,
        "forbidden",
        "This key may not read data (a public key only sends events). Use the project's secret key.",
      );
    }
    throw e;
  }
}

function signInMessage(e: unknown): string {
  if (e instanceof ApiError) {
    if (e.status === 401) return "This key is not valid: it is unknown, revoked or expired.";
    return e.message;
  }
  return String(e);
}

export function App(props: { shareToken: string | null }): JSX.Element {
  const [session, setSession] = useState<Session | null>(null);
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);

  const start = async (token: string, remember: boolean) => {
    setBusy(true);
    setError("");
    try {
      const s = await openSession(token);
      s.api.onUnauthorized = () => {
        if (!props.shareToken) sessionStorage.removeItem(STORE_KEY);
        setSession(null);
        setError(
          props.shareToken
            ? shareMessage(new ApiError(401, "invalid_api_key", ""))
            : s.api.kind === "session"
              ? "Your session has ended (signed out, expired or your access changed). Sign in again."
              : "Your key is no longer valid (revoked or expired). Sign in again.",
        );
      };
      if (!props.shareToken) {
        if (remember) sessionStorage.setItem(STORE_KEY, token);
        else sessionStorage.removeItem(STORE_KEY);
      }
      setSession(s);
    } catch (e) {
      if (!props.shareToken) sessionStorage.removeItem(STORE_KEY);
      setError(props.shareToken ? shareMessage(e) : signInMessage(e));
    } finally {
      setBusy(false);
    }
  };

  useEffect(() => {
    const token = props.shareToken ?? sessionStorage.getItem(STORE_KEY);
    if (token) void start(token, true);
  }, []);

  const [invite, setInvite] = useState(() => (props.shareToken ? null : tokenFromHash("invite")));
  const [reset, setReset] = useState(() => (props.shareToken ? null : tokenFromHash("reset")));
  useEffect(() => {
    if (props.shareToken) return;
    // A link pasted into a tab that has the dashboard open only changes the hash.
    const onHash = () => {
      setInvite(tokenFromHash("invite"));
      setReset(tokenFromHash("reset"));
    };
    window.addEventListener("hashchange", onHash);
    return () => window.removeEventListener("hashchange", onHash);
  }, []);

  /** Forgets the credential; a session is also ended on the server unless it is already. */
  const signOut = (tellServer = true) => {
    sessionStorage.removeItem(STORE_KEY);
    if (session) {
      session.api.onUnauthorized = null;
      session.api.clear();
      if (tellServer && session.api.kind === "session")
        void session.api.send("POST", "/auth/signout").catch(() => {});
    }
    setSession(null);
  };

  if (reset) {
    return (
      <ResetPage
        token={reset}
        onDone={() => {
          clearHash();
          setReset(null);
          signOut(false);
        }}
      />
    );
  }
  if (invite) {
    return (
      <InvitePage
        token={invite}
        session={session?.api.kind === "session" ? session.api : null}
        signedInAs={session?.me?.email ?? ""}
        onAccepted={(token) => {
          clearHash();
          setInvite(null);
          void start(token, true);
        }}
      />
    );
  }
  if (session) {
    return (
      <Dashboard
        session={session}
        onSignOut={props.shareToken ? null : signOut}
        onRefresh={() => void start(session.api.token, true)}
      />
    );
  }
  if (props.shareToken) {
    return (
      <main id="main" class="center-page">
        <div class="card signin">
          <h1 class="brand-title">svc</h1>
          {error ? (
            <p class="note error" role="alert">
              {error}
            </p>
          ) : (
            <p class="note" role="status">
              Opening the shared dashboard…
            </p>
          )}
        </div>
      </main>
    );
  }
  return <SignIn busy={busy} error={error} onSubmit={start} />;
}

/** The account's buttons of the top bar (Team and access, Your account) and their dialogs. */
function AccountButtons(props: {
  session: Session;
  project: Project | null;
  onSignOut: (tellServer?: boolean) => void;
  onRefresh: () => void;
}): JSX.Element | null {
  const [open, setOpen] = useState<"" | "account" | "team">("");
  const { api, me } = props.session;
  if (!me) return null;
  return (
    <>
      <button type="button" class="ghost" onClick={() => setOpen("team")}>
        Team
      </button>
      <button type="button" class="ghost" onClick={() => setOpen("account")} title={me.email}>
        Account
      </button>
      {open === "account" && (
        <AccountDialog api={api} onClose={() => setOpen("")} onSignedOut={props.onSignOut} />
      )}
      {open === "team" && (
        <TeamDialog
          api={api}
          teams={me.teams}
          me={me.id}
          project={props.project}
          onClose={() => setOpen("")}
          onChanged={props.onRefresh}
        />
      )}
    </>
  );
}

function shareMessage(e: unknown): string {
  if (e instanceof ApiError && (e.status === 401 || e.status === 403)) {
    return "This share link is not valid any more: it may have been revoked. Ask the site's owner for a new one.";
  }
  return signInMessage(e);
}

function SignIn(props: {
  busy: boolean;
  error: string;
  onSubmit: (token: string, remember: boolean) => void;
}): JSX.Element {
  const [token, setToken] = useState("");
  const [remember, setRemember] = useState(true);
  return (
    <main id="main" class="center-page">
      <div class="card signin">
        <h1 class="brand-title">svc</h1>
        <PersonSignIn onSignedIn={(t) => props.onSubmit(t, true)} />
        <p class="or">or with a project's secret key or the admin token</p>
        <form
          class="signin-form"
          onSubmit={(e) => {
            e.preventDefault();
            if (token.trim()) props.onSubmit(token.trim(), remember);
          }}
        >
          <label for="key">Secret key or admin token</label>
          <input
            id="key"
            name="key"
            type="password"
            autocomplete="off"
            spellcheck={false}
            placeholder="svc_live_… or svc_admin_…"
            value={token}
            onInput={(e) => setToken((e.target as HTMLInputElement).value)}
            aria-invalid={props.error ? true : undefined}
            aria-describedby={props.error ? "signin-error" : "signin-help"}
            required
          />
          <label class="check">
            <input
              type="checkbox"
              checked={remember}
              onChange={(e) => setRemember((e.target as HTMLInputElement).checked)}
            />
            Keep me signed in while this tab is open
          </label>
          {props.error && (
            <p id="signin-error" class="note error" role="alert">
              {props.error}
            </p>
          )}
          <button class="primary" type="submit" disabled={props.busy}>
            {props.busy ? "Signing in…" : "Sign in"}
          </button>
          <p id="signin-help" class="help">
            The key stays in this page (and this tab's session storage if you keep it): no cookie is set.
          </p>
        </form>
      </div>
    </main>
  );
}

type DashboardProps = {
  session: Session;
  onSignOut: ((tellServer?: boolean) => void) | null;
  onRefresh: () => void;
};

/** Whether the session may see "All projects": two projects or more, read with a session or
 * the admin token (a key reads its own project). */
function seesAll(session: Session): boolean {
  const kind = session.api.kind;
  return !session.readOnly && session.projects.length >= 2 && (kind === "admin" || kind === "session");
}

function Dashboard(props: DashboardProps): JSX.Element {
  const view = useView();
  if (view.project !== ALL_PROJECTS || !seesAll(props.session)) return <ProjectDashboard {...props} />;
  const today = todayIn(Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC");
  const topbar = (
    <>
      <span class="brand" aria-label="svc analytics">
        svc
      </span>
      <ProjectPicker projects={props.session.projects} project={null} readOnly={false} />
      <span class="spacer" />
      {props.onSignOut && (
        <AccountButtons
          session={props.session}
          project={null}
          onSignOut={props.onSignOut}
          onRefresh={props.onRefresh}
        />
      )}
      {props.onSignOut && (
        <button type="button" class="ghost" onClick={() => props.onSignOut?.()}>
          Sign out
        </button>
      )}
    </>
  );
  return (
    <Overview
      api={props.session.api}
      today={today}
      topbar={topbar}
      dateControl={<DateControl today={today} />}
    />
  );
}

function ProjectDashboard(props: DashboardProps): JSX.Element {
  const { api, projects, readOnly } = props.session;
  const view = useView();
  const [tick, setTick] = useState(0);
  const [sharing, setSharing] = useState(false);

  const project = projects.find((p) => p.id === view.project) ?? projects[0];
  const tz = project?.timezone ?? "UTC";
  const [today, setToday] = useState(() => todayIn(tz));
  useEffect(() => setToday(todayIn(tz)), [tz]);

  const range = rangeOf(view.period, today, { from: view.from, to: view.to });
  const intervals = intervalsFor(range);
  const interval =
    view.interval && intervals.includes(view.interval) ? view.interval : defaultInterval(range, view.period);
  const live = range.to >= today;

  // Ranges that reach today refresh every minute while the page is visible.
  useEffect(() => {
    const id = setInterval(() => {
      if (document.visibilityState !== "visible") return;
      const t = todayIn(tz);
      setToday(t);
      if (live) setTick((n) => n + 1);
    }, 60_000);
    return () => clearInterval(id);
  }, [tz, live]);

  const base: Params = useMemo(() => {
    const p: Params = [
      ["from", range.from],
      ["to", range.to],
    ];
    for (const f of view.filters) p.push(["filter", f]);
    return project ? scoped(api, project, p) : p;
  }, [range.from, range.to, view.filters.join("\n"), project?.id]);

  const metricsParams: Params = view.compare === "off" ? base : [...base, ["compare", view.compare]];
  const metrics = useLoad<MetricsAnswer>(api, tick, project ? "/metrics" : null, metricsParams);

  useEffect(() => {
    document.title = project ? `${project.name} · svc` : "svc";
  }, [project?.name]);

  if (!project) {
    return (
      <main id="main" class="center-page">
        <div class="card signin">
          <h1 class="brand-title">svc</h1>
          {props.session.me ? (
            <p>
              Signed in as {props.session.me.email}: you have no projects yet. An owner or an admin of your
              team creates one with <code>POST /projects</code>; an invitation gives you access to one.
            </p>
          ) : (
            <p>
              There are no projects yet. Create one with <code>POST /projects</code> or{" "}
              <code>svcm projects create NAME</code>.
            </p>
          )}
          {props.onSignOut && (
            <AccountButtons
              session={props.session}
              project={null}
              onSignOut={props.onSignOut}
              onRefresh={props.onRefresh}
            />
          )}
          {props.onSignOut && (
            <button type="button" onClick={() => props.onSignOut?.()}>
              Sign out
            </button>
          )}
        </div>
      </main>
    );
  }

  const ctx: Ctx = {
    api,
    project,
    range,
    interval,
    view,
    base,
    tick,
    readOnly,
    metrics: metrics.data,
  };

  return (
    <Query.Provider value={ctx}>
      <a class="skip" href="#main">
        Skip to the statistics
      </a>
      <header class="top">
        <div class="topbar">
          <span class="brand" aria-label="svc analytics">
            svc
          </span>
          <ProjectPicker
            projects={projects}
            project={project}
            readOnly={readOnly || (api.kind !== "admin" && api.kind !== "session")}
          />
          <Realtime />
          <span class="spacer" />
          {project.role && (
            <span class="badge" data-testid="project-role" title="Your role on this project">
              {roleLabel(project.role)}
            </span>
          )}
          {readOnly ? (
            <span class="badge" title="This dashboard is shared read-only">
              Read-only
            </span>
          ) : (
            (api.kind !== "session" || may(project.role, "manage")) && (
              <button type="button" class="ghost" onClick={() => setSharing(true)}>
                Share
              </button>
            )
          )}
          <SettingsButton onChanged={props.onRefresh} />
          {props.onSignOut && (
            <AccountButtons
              session={props.session}
              project={project}
              onSignOut={props.onSignOut}
              onRefresh={props.onRefresh}
            />
          )}
          {props.onSignOut && (
            <button type="button" class="ghost" onClick={() => props.onSignOut?.()}>
              Sign out
            </button>
          )}
        </div>
      </header>
      <div class="controls" role="region" aria-label="Date range and filters">
        <div class="controls-inner">
          <DateControl today={today} />
          <Field label="Compare">
            {(id) => (
              <>
                <select
                  id={id}
                  value={view.compare}
                  onChange={(e) => setView({ compare: (e.target as HTMLSelectElement).value as Compare })}
                >
                  <option value="off">No comparison</option>
                  <option value="previous_period">Previous period</option>
                  <option value="previous_year">Previous year</option>
                </select>
              </>
            )}
          </Field>
          <span
            class="tz"
            title="Days and hours are counted in the project's time zone"
            data-testid="range"
            data-from={range.from}
            data-to={range.to}
            data-tz={tz}
          >
            {rangeLabel(range)} · {tz}
          </span>
        </div>
        <FilterBar />
      </div>
      <main id="main" tabIndex={-1}>
        {metrics.error && !metrics.data ? (
          <p class="note error card" role="alert">
            Could not load the statistics: {metrics.error.message}
          </p>
        ) : null}
        {metrics.data?.rawDataFrom ? (
          <p class="note card" role="status" data-testid="raw-data-from">
            Raw events are kept from {metrics.data.rawDataFrom} (UTC). Earlier days come from the daily
            rollups: the totals, sources, pages and other breakdowns without filters; filtered figures, goals,
            funnels, revenue and errors count nothing before that day.
          </p>
        ) : null}
        <TopStats loading={metrics.loading && !metrics.data} />
        <Chart />
        <div class="grid">
          <SourcesPanel />
          <PagesPanel />
          <LocationsPanel />
          <DevicesPanel />
          <EventsPanel />
          <GoalsPanel />
          <FunnelPanel />
          <RevenuePanel />
          <ErrorsPanel />
          <EngagementPanel />
          <VitalsPanel />
          <LinksPanel />
          <JourneysPanel />
          <SubscriptionsPanel />
          <DroppedPanel />
        </div>
      </main>
      <footer class="foot">svc · cookie-free analytics · times in {tz}</footer>
      {sharing && <ShareDialog onClose={() => setSharing(false)} />}
    </Query.Provider>
  );
}

/** The project's name, or a choice of project (and "All projects") when there are several;
 * `project` null: "All projects" is shown. */
function ProjectPicker(props: {
  projects: Project[];
  project: Project | null;
  readOnly: boolean;
}): JSX.Element {
  if (props.project && (props.readOnly || props.projects.length < 2)) {
    return (
      <h1 class="project-name" title={props.project.id}>
        {props.project.name}
      </h1>
    );
  }
  return (
    <>
      <h1 class="sr-only">{props.project?.name ?? "All projects"}</h1>
      <Field class="project-pick" hideLabel label="Project">
        {(id) => (
          <>
            <select
              id={id}
              value={props.project?.id ?? ALL_PROJECTS}
              onChange={(e) => setView({ project: (e.target as HTMLSelectElement).value })}
            >
              <option value={ALL_PROJECTS}>All projects</option>
              {props.projects.map((p) => (
                <option key={p.id} value={p.id}>
                  {p.name}
                </option>
              ))}
            </select>
          </>
        )}
      </Field>
    </>
  );
}

function DateControl(props: { today: string }): JSX.Element {
  const view = useView();
  const r = rangeOf(view.period, props.today, { from: view.from, to: view.to });
  const choose = (period: Period) => {
    if (period === "custom") setView({ period, from: r.from, to: r.to, interval: "" });
    else setView({ period, from: "", to: "", interval: "" });
  };
  const setDay = (which: "from" | "to", value: string) => {
    if (!isDay(value)) return;
    const next = { from: r.from, to: r.to, [which]: value };
    if (next.to < next.from) {
      if (which === "from") next.to = value;
      else next.from = value;
    }
    setView({ period: "custom", ...next, interval: "" });
  };
  return (
    <>
      <Field label="Date range">
        {(id) => (
          <>
            <select
              id={id}
              value={view.period}
              onChange={(e) => choose((e.target as HTMLSelectElement).value as Period)}
            >
              {PERIODS.map((p) => (
                <option key={p.id} value={p.id}>
                  {p.label}
                </option>
              ))}
            </select>
          </>
        )}
      </Field>
      {view.period === "custom" && (
        <>
          <Field label="From">
            {(id) => (
              <>
                <input
                  id={id}
                  type="date"
                  value={r.from}
                  max={props.today}
                  onChange={(e) => setDay("from", (e.target as HTMLInputElement).value)}
                />
              </>
            )}
          </Field>
          <Field label="To">
            {(id) => (
              <>
                <input
                  id={id}
                  type="date"
                  value={r.to}
                  max={props.today}
                  onChange={(e) => setDay("to", (e.target as HTMLInputElement).value)}
                />
              </>
            )}
          </Field>
        </>
      )}
    </>
  );
}

export function tokenFromPath(pathname: string): string | null {
  const m = /\/share\/([^/]+)\/?$/.exec(pathname);
  return m ? decodeURIComponent(m[1]!) : null;
}
