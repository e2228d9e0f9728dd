// People's accounts (docs/api.md, "Accounts and teams"): sign-in with an email and a password
// (then an authenticator or recovery code), sign-up by invitation, the account's settings, and
// the team's members, invitations and a project's guests. Screens show only what the role
// allows; the server decides (its 403 and 409 messages are shown as they are).

import type { JSX } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import { Api, ApiError } from "./api";
import { ErrorNote, SelectField, StatusNote, TextField } from "./fields";
import { Modal } from "./ui";
import type { Project } from "./types";

export interface TeamRef {
  id: string;
  name: string;
  role: string;
}

export interface Me {
  id: string;
  email: string;
  name: string;
  totpEnabled: boolean;
  teams: TeamRef[];
  projects: { id: string; role: string }[];
  recoveryCodesLeft: number;
}

interface SignedIn {
  token: string;
  expiresAt: string;
}

interface Member {
  id: string;
  email: string;
  name: string;
  role: string;
  disabled: boolean;
}

interface TeamDetail {
  id: string;
  name: string;
  members: Member[];
  projects: string[];
}

interface Invitation {
  id: string;
  email: string;
  role: string;
  expiresAt: string;
}

interface Invited {
  invitation: Invitation;
  mailed: boolean;
  link?: string;
}

interface Preview extends Invitation {
  teamName: string | null;
  projectId: string | null;
  accountExists: boolean;
}

const RIGHTS: Record<string, string[]> = {
  owner: ["read", "edit", "manage", "members", "owner"],
  admin: ["read", "edit", "manage", "members"],
  editor: ["read", "edit"],
  viewer: ["read"],
  guest: ["read"],
};

const ROLE_LABELS: Record<string, string> = {
  owner: "Owner",
  admin: "Admin",
  editor: "Editor",
  viewer: "Viewer",
  guest: "Guest",
};

/** Whether a role has a right (the table of docs/api.md; the server checks it again). */
export function may(role: string | undefined, right: string): boolean {
  return !!role && (RIGHTS[role] ?? []).includes(right);
}

export function roleLabel(role: string): string {
  return ROLE_LABELS[role] ?? role;
}

function message(e: unknown): string {
  return e instanceof ApiError ? e.message : String(e);
}

/** The token of a link's address: `#invite=svc_invite_...` or `#reset=svc_reset_...`. */
export function tokenFromHash(kind: "invite" | "reset", hash: string = location.hash): string | null {
  const m = new RegExp(`^#${kind}=([A-Za-z0-9_]+)$`).exec(hash);
  return m ? m[1]! : null;
}

/** Forgets the link's token in the address bar (it works once). */
export function clearHash(): void {
  history.replaceState(null, "", location.pathname + location.search);
}

/** "Forgot your password?": asks for a reset link (the same answer whether the email is known). */
export function ForgotPassword(): JSX.Element {
  const [open, setOpen] = useState(false);
  const [email, setEmail] = useState("");
  const [done, setDone] = useState("");
  const [error, setError] = useState("");
  if (!open) {
    return (
      <button type="button" class="link small" onClick={() => setOpen(true)}>
        Forgot your password?
      </button>
    );
  }
  return (
    <form
      class="signin-form"
      onSubmit={(e) => {
        e.preventDefault();
        setError("");
        anonymous.send("POST", "/auth/reset", { email: email.trim() }).then(
          () =>
            setDone(
              "If an account has this email, a link to choose a new password is on its way. " +
                "No mail? The operator can set one (svcm users password).",
            ),
          (err: unknown) => setError(message(err)),
        );
      }}
    >
      <TextField
        label="Email of your account"
        type="email"
        autocomplete="username"
        required
        value={email}
        onValue={setEmail}
      />
      <button type="submit">Send a reset link</button>
      <StatusNote text={done} />
      <ErrorNote text={error} />
    </form>
  );
}

/** The page of a reset link: a new password (every session of the account ends). */
export function ResetPage(props: { token: string; onDone: () => void }): JSX.Element {
  const [password, setPassword] = useState("");
  const [done, setDone] = useState(false);
  const [error, setError] = useState("");
  return (
    <main id="main" class="center-page">
      <div class="card signin" data-testid="reset-page">
        <h1 class="brand-title">svc</h1>
        {done ? (
          <>
            <p role="status">Your password is changed. Sign in with it.</p>
            <button class="primary" type="button" onClick={props.onDone}>
              Go to sign-in
            </button>
          </>
        ) : (
          <form
            class="signin-form"
            onSubmit={(e) => {
              e.preventDefault();
              setError("");
              anonymous.send("POST", "/auth/reset/confirm", { token: props.token, password }).then(
                () => setDone(true),
                (err: unknown) =>
                  setError(
                    err instanceof ApiError && err.status === 404
                      ? "This link is not valid any more: it was used or has expired. Ask for a new one."
                      : message(err),
                  ),
              );
            }}
          >
            <h2 class="sub-title">Choose a new password</h2>
            <TextField
              label="New password"
              type="password"
              autocomplete="new-password"
              minLength={10}
              maxLength={256}
              required
              value={password}
              onValue={setPassword}
            />
            <button class="primary" type="submit">
              Set the password
            </button>
            <ErrorNote text={error} />
          </form>
        )}
      </div>
    </main>
  );
}

const anonymous = new Api("");

/** Email and password, then the authenticator's code (or a recovery code) when asked. */
export function PasswordSignIn(props: {
  email?: string;
  onSignedIn: (token: string) => void | Promise<void>;
}): JSX.Element {
  const [email, setEmail] = useState(props.email ?? "");
  const [password, setPassword] = useState("");
  const [code, setCode] = useState("");
  const [needCode, setNeedCode] = useState(false);
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError("");
    try {
      const body: Record<string, string> = { email: email.trim(), password };
      if (needCode) body.code = code.trim();
      const r = await anonymous.send<SignedIn>("POST", "/auth/signin", body);
      await props.onSignedIn(r.token);
    } catch (err) {
      if (err instanceof ApiError && err.code === "totp_required") {
        setNeedCode(true);
      } else if (err instanceof ApiError && err.code === "invalid_credentials") {
        setError(needCode ? "This code is not valid." : "The email or the password is wrong.");
      } else setError(message(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <form class="signin-form" onSubmit={submit} data-testid="password-signin">
      {needCode ? (
        // A fragment in both branches, as before: Preact keeps the first input's element.
        <>
          <TextField
            label="Authentication code"
            name="code"
            autocomplete="one-time-code"
            inputMode="text"
            spellcheck={false}
            required
            value={code}
            onValue={setCode}
            hint={{
              id: "code-help",
              text: "The 6 digits of your authenticator app, or one of your recovery codes.",
            }}
          />
        </>
      ) : (
        <>
          <TextField
            label="Email"
            name="email"
            type="email"
            autocomplete="username"
            required
            readOnly={!!props.email}
            value={email}
            onValue={setEmail}
          />
          <TextField
            label="Password"
            name="password"
            type="password"
            autocomplete="current-password"
            required
            value={password}
            onValue={setPassword}
          />
        </>
      )}
      <ErrorNote text={error} />
      <button class="primary" type="submit" disabled={busy}>
        {needCode ? "Verify" : "Continue"}
      </button>
    </form>
  );
}

/** The page of an invitation link: create the account (sign-up) or sign in, then accept. */
export function InvitePage(props: {
  token: string;
  session: Api | null;
  signedInAs: string;
  onAccepted: (sessionToken: string) => void;
}): JSX.Element {
  const [preview, setPreview] = useState<Preview | null>(null);
  const [error, setError] = useState("");
  const [name, setName] = useState("");
  const [password, setPassword] = useState("");
  const [busy, setBusy] = useState(false);
  const path = `/invitations/${encodeURIComponent(props.token)}`;

  useEffect(() => {
    anonymous
      .send<Preview>("GET", path)
      .then(setPreview, (e: unknown) =>
        setError(
          e instanceof ApiError && e.status === 404
            ? "This invitation is not valid any more: it was used, withdrawn or has expired. Ask for a new one."
            : message(e),
        ),
      );
  }, [props.token]);

  const accept = async (api: Api, body?: unknown) => {
    setBusy(true);
    setError("");
    try {
      const r = await api.send<{ token?: string }>("POST", `${path}/accept`, body ?? {});
      props.onAccepted(r.token ?? api.token);
    } catch (e) {
      setError(message(e));
    } finally {
      setBusy(false);
    }
  };

  const where = preview
    ? preview.teamName
      ? `the team ${preview.teamName}`
      : `the project ${(preview.projectId ?? "").replace(/^svc_proj_/, "")}`
    : "";
  return (
    <main id="main" class="center-page">
      <div class="card signin" data-testid="invite-page">
        <h1 class="brand-title">svc</h1>
        {!preview && !error && (
          <p class="note" role="status">
            Reading the invitation…
          </p>
        )}
        {preview && (
          <p class="lead">
            You are invited to {where} as <strong>{roleLabel(preview.role).toLowerCase()}</strong>, with the
            email <strong>{preview.email}</strong>.
          </p>
        )}
        {preview && props.session && (
          <button class="primary" type="button" disabled={busy} onClick={() => void accept(props.session!)}>
            Accept as {props.signedInAs}
          </button>
        )}
        {preview && !props.session && preview.accountExists && (
          <>
            <h2 class="sub-title">Sign in to accept</h2>
            <PasswordSignIn email={preview.email} onSignedIn={(token) => accept(new Api(token))} />
          </>
        )}
        {preview && !props.session && !preview.accountExists && (
          <form
            class="signin-form"
            onSubmit={(e) => {
              e.preventDefault();
              void accept(anonymous, { password, ...(name.trim() ? { name: name.trim() } : {}) });
            }}
          >
            <h2 class="sub-title">Create your account</h2>
            <TextField label="Your name" name="name" autocomplete="name" value={name} onValue={setName} />
            <TextField
              label="Choose a password"
              name="new-password"
              type="password"
              autocomplete="new-password"
              minLength={10}
              maxLength={256}
              required
              value={password}
              onValue={setPassword}
              hint={{ id: "password-help", text: "10 to 256 characters." }}
            />
            <button class="primary" type="submit" disabled={busy}>
              Create the account
            </button>
          </form>
        )}
        <ErrorNote text={error} />
      </div>
    </main>
  );
}

/** The account's settings: password, two-factor, sign out (here or everywhere). */
export function AccountDialog(props: {
  api: Api;
  onClose: () => void;
  /** Forget the session here; `tellServer`: end it on the server too (not ended yet). */
  onSignedOut: (tellServer: boolean) => void;
}): JSX.Element {
  const { api } = props;
  const [me, setMe] = useState<Me | null>(null);
  const [error, setError] = useState("");
  const [status, setStatus] = useState("");
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const [enrol, setEnrol] = useState<{ secret: string; uri: string } | null>(null);
  const [code, setCode] = useState("");
  const [codes, setCodes] = useState<string[] | null>(null);
  const [offPassword, setOffPassword] = useState("");
  const [enrolPassword, setEnrolPassword] = useState("");

  const load = async () => setMe(await api.send<Me>("GET", "/account"));
  useEffect(() => {
    load().catch((e: unknown) => setError(message(e)));
  }, []);

  const run = async (what: () => Promise<void>) => {
    setError("");
    setStatus("");
    try {
      await what();
    } catch (e) {
      setError(message(e));
    }
  };

  const changePassword = (e: Event) => {
    e.preventDefault();
    void run(async () => {
      await api.send("PATCH", "/account", { password: next, currentPassword: current });
      setCurrent("");
      setNext("");
      setStatus("Your password is changed; your other sessions are signed out.");
    });
  };
  const confirmTotp = (e: Event) => {
    e.preventDefault();
    void run(async () => {
      const r = await api.send<{ recoveryCodes: string[] }>("POST", "/account/totp/confirm", {
        code: code.trim(),
        password: enrolPassword,
      });
      setCodes(r.recoveryCodes);
      setEnrol(null);
      setCode("");
      setEnrolPassword("");
      await load();
    });
  };
  const disableTotp = (e: Event) => {
    e.preventDefault();
    void run(async () => {
      // Passwords have 10 characters or more: six digits are the authenticator's code.
      const proof = offPassword.replace(/\s/g, "");
      await api.send(
        "DELETE",
        "/account/totp",
        /^\d{6}$/.test(proof) ? { code: proof } : { password: offPassword },
      );
      setOffPassword("");
      setCodes(null);
      setStatus("Two-factor authentication is off.");
      await load();
    });
  };
  const signOutEverywhere = () =>
    void run(async () => {
      await api.send("POST", "/auth/signout-everywhere");
      props.onSignedOut(false);
    });

  return (
    <Modal title="Your account" onClose={props.onClose} wide>
      <div class="account" data-testid="account-dialog">
        {me && (
          <p>
            Signed in as <strong data-testid="account-email">{me.email}</strong>
            {me.name ? ` (${me.name})` : ""}.
          </p>
        )}
        <section aria-labelledby="pw-title">
          <h3 id="pw-title">Password</h3>
          <form class="inline-form" onSubmit={changePassword}>
            <TextField
              label="Current password"
              type="password"
              autocomplete="current-password"
              required
              value={current}
              onValue={setCurrent}
            />
            <TextField
              label="New password"
              type="password"
              autocomplete="new-password"
              minLength={10}
              required
              value={next}
              onValue={setNext}
            />
            <button type="submit">Change password</button>
          </form>
        </section>
        <section aria-labelledby="totp-title">
          <h3 id="totp-title">Two-factor authentication</h3>
          {codes && (
            <div class="recovery" data-testid="recovery-codes">
              <p>
                <strong>Save these recovery codes now</strong>: they are shown only once. Each signs you in
                once when you do not have your authenticator.
              </p>
              <ul class="plain codes" aria-label="Recovery codes">
                {codes.map((c) => (
                  <li key={c}>
                    <code>{c}</code>
                  </li>
                ))}
              </ul>
            </div>
          )}
          {me && !me.totpEnabled && !enrol && (
            <>
              <p data-testid="totp-state">Off: signing in asks for your password only.</p>
              <button
                type="button"
                onClick={() =>
                  void run(async () =>
                    setEnrol(await api.send<{ secret: string; uri: string }>("POST", "/account/totp")),
                  )
                }
              >
                Set up two-factor
              </button>
            </>
          )}
          {enrol && (
            <form onSubmit={confirmTotp} class="enrol">
              <p>
                Add this account to your authenticator app: open the <a href={enrol.uri}>otpauth link</a>, or
                enter the secret <code data-testid="totp-secret">{enrol.secret}</code> by hand.
              </p>
              <p class="help break">
                <code data-testid="totp-uri">{enrol.uri}</code>
              </p>
              <div class="inline-form">
                <TextField
                  label="Code from the app"
                  autocomplete="one-time-code"
                  inputMode="numeric"
                  required
                  value={code}
                  onValue={setCode}
                />
                <TextField
                  label="Your password"
                  type="password"
                  autocomplete="current-password"
                  required
                  value={enrolPassword}
                  onValue={setEnrolPassword}
                />
                <button type="submit" class="primary">
                  Turn on
                </button>
              </div>
            </form>
          )}
          {me && me.totpEnabled && (
            <form onSubmit={disableTotp}>
              <p data-testid="totp-state">
                On: signing in asks for a code. {me.recoveryCodesLeft} recovery codes left.
              </p>
              <div class="inline-form">
                <TextField
                  label="Password or current code"
                  type="password"
                  autocomplete="current-password"
                  required
                  value={offPassword}
                  aria-describedby="totp-off-help"
                  onValue={setOffPassword}
                />
                <button type="submit" class="danger">
                  Turn off two-factor
                </button>
              </div>
              <p id="totp-off-help" class="help">
                To turn it off, confirm with your password or the 6-digit code your authenticator app shows
                now.
              </p>
            </form>
          )}
        </section>
        <section aria-labelledby="sessions-title">
          <h3 id="sessions-title">Sessions</h3>
          <p class="help">Signing out everywhere ends this session and those of your other browsers.</p>
          <div class="inline-form">
            <button type="button" onClick={() => props.onSignedOut(true)}>
              Sign out
            </button>
            <button type="button" class="danger" onClick={signOutEverywhere}>
              Sign out everywhere
            </button>
          </div>
        </section>
        <StatusNote text={status} />
        <ErrorNote text={error} />
      </div>
    </Modal>
  );
}

/** A link to pass on when the server does not mail (no SVC_SMTP_URL). */
function InviteLink(props: { link: string }): JSX.Element {
  const [copied, setCopied] = useState(false);
  return (
    <div class="invite-link">
      <p>Mail is off on this server: send this link yourself. It works once.</p>
      <div class="inline-form">
        <TextField
          class="grow"
          label="Invitation link"
          readOnly
          value={props.link}
          data-testid="invite-link"
          onFocus={(e) => (e.target as HTMLInputElement).select()}
        />
        <button
          type="button"
          onClick={() => {
            navigator.clipboard?.writeText(props.link).then(
              () => setCopied(true),
              () => setCopied(false),
            );
          }}
        >
          {copied ? "Copied" : "Copy link"}
        </button>
      </div>
    </div>
  );
}

function InviteForm(props: {
  label: string;
  roles: string[];
  onInvite: (email: string, role: string) => Promise<Invited>;
}): JSX.Element {
  const [email, setEmail] = useState("");
  const [role, setRole] = useState(props.roles[0] ?? "viewer");
  const [result, setResult] = useState<Invited | null>(null);
  const [error, setError] = useState("");
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError("");
    setResult(null);
    try {
      setResult(await props.onInvite(email.trim(), role));
      setEmail("");
    } catch (err) {
      setError(message(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <form class="inline-form" onSubmit={submit}>
        <TextField
          class="grow"
          label={props.label}
          type="email"
          autocomplete="off"
          required
          value={email}
          onValue={setEmail}
        />
        {props.roles.length > 1 && (
          <SelectField
            label="Role"
            value={role}
            onValue={setRole}
            options={props.roles.map((r) => ({ value: r, text: roleLabel(r) }))}
          />
        )}
        <button type="submit" disabled={busy}>
          {props.roles.length > 1 ? "Invite" : "Invite as guest"}
        </button>
      </form>
      {result &&
        (result.mailed ? <p role="status">Invitation mailed to {result.invitation.email}.</p> : null)}
      {result?.link && <InviteLink link={result.link} />}
      <ErrorNote text={error} />
    </>
  );
}

/** Renames a team (the `manage` right: owners and admins). Keyed by the team's id and name:
 * another team, or a new name, starts it afresh. */
function RenameTeam(props: { team: TeamDetail; onRename: (name: string) => Promise<void> }): JSX.Element {
  const [name, setName] = useState(props.team.name);
  return (
    <form
      class="inline-form"
      onSubmit={(e) => {
        e.preventDefault();
        void props.onRename(name.trim());
      }}
    >
      <TextField class="grow" label="Team name" required maxLength={100} value={name} onValue={setName} />
      <button type="submit" disabled={!name.trim() || name.trim() === props.team.name}>
        Rename
      </button>
    </form>
  );
}

/** Moves a project to another team the account owns (owners of both teams only). */
function TransferProject(props: {
  project: Project;
  targets: TeamRef[];
  onMove: (teamId: string) => Promise<void>;
}): JSX.Element {
  const [target, setTarget] = useState(props.targets[0]?.id ?? "");
  if (props.targets.length === 0) {
    return (
      <p class="help" data-testid="transfer-none">
        To move {props.project.name} to another team, you must own that team too.
      </p>
    );
  }
  return (
    <form
      class="inline-form"
      onSubmit={(e) => {
        e.preventDefault();
        if (target) void props.onMove(target);
      }}
    >
      <SelectField
        label="Move to the team"
        value={target}
        onValue={setTarget}
        options={props.targets.map((t) => ({ value: t.id, text: t.name }))}
      />
      <button type="submit" class="danger">
        Move {props.project.name}
      </button>
    </form>
  );
}

/** A button that asks before it acts (a withdrawal cannot be undone). Pressed, it gives way
 * to the question, a confirming button (focused) and "Keep"; Escape or "Keep" cancels and
 * gives the focus back to the button. Every step works from the keyboard. */
export function ConfirmAction(props: {
  label: string;
  /** The button's accessible name (the label alone is ambiguous in a list). */
  name: string;
  question: string;
  confirm: string;
  onConfirm: () => void | Promise<void>;
}): JSX.Element {
  const [asking, setAsking] = useState(false);
  const opener = useRef<HTMLButtonElement>(null);
  const yes = useRef<HTMLButtonElement>(null);
  const refocus = useRef(false);
  useEffect(() => {
    if (asking) yes.current?.focus();
    else if (refocus.current) opener.current?.focus();
    refocus.current = false;
  }, [asking]);
  const cancel = () => {
    refocus.current = true;
    setAsking(false);
  };
  if (!asking) {
    return (
      <button
        type="button"
        class="link small"
        ref={opener}
        aria-label={props.name}
        onClick={() => setAsking(true)}
      >
        {props.label}
      </button>
    );
  }
  return (
    <span
      class="confirm-action"
      role="group"
      aria-label={props.question}
      onKeyDown={(e) => {
        if (e.key === "Escape") {
          e.preventDefault(); // the question closes, not the dialog around it
          e.stopPropagation();
          cancel();
        }
      }}
    >
      <span>{props.question}</span>
      <button
        type="button"
        class="link small danger"
        ref={yes}
        onClick={() => {
          setAsking(false);
          void props.onConfirm();
        }}
      >
        {props.confirm}
      </button>
      <button type="button" class="link small" onClick={cancel}>
        Keep
      </button>
    </span>
  );
}

/** The team's members, invitations and the current project's guests. */
export function TeamDialog(props: {
  api: Api;
  teams: TeamRef[];
  me: string;
  project: Project | null;
  onClose: () => void;
  onChanged: () => void;
}): JSX.Element {
  const { api } = props;
  const [teamId, setTeamId] = useState(props.teams[0]?.id ?? "");
  const [team, setTeam] = useState<TeamDetail | null>(null);
  const [pending, setPending] = useState<Invitation[]>([]);
  const [guests, setGuests] = useState<{ guests: Member[]; invitations: Invitation[] } | null>(null);
  const [error, setError] = useState("");
  const [status, setStatus] = useState("");
  const myRole = props.teams.find((t) => t.id === teamId)?.role;
  const manages = may(myRole, "members");
  const projectRole = props.project?.role;
  const base = `/teams/${encodeURIComponent(teamId)}`;
  const guestsPath = props.project ? `/projects/${encodeURIComponent(props.project.id)}/guests` : "";

  const load = async () => {
    if (teamId) {
      setTeam(await api.send<TeamDetail>("GET", base));
      if (manages)
        setPending((await api.send<{ invitations: Invitation[] }>("GET", `${base}/invitations`)).invitations);
    }
    if (guestsPath && may(projectRole, "members")) setGuests(await api.send("GET", guestsPath));
  };
  useEffect(() => {
    load().catch((e: unknown) => setError(message(e)));
  }, [teamId]);

  const run = async (what: () => Promise<unknown>) => {
    setError("");
    setStatus("");
    try {
      await what();
      await load();
    } catch (e) {
      setError(message(e));
    }
  };
  // A pending invitation's Withdraw button, the team's and the guests' alike: it asks first
  // (ConfirmAction), then DELETEs `${path}/${id}` and says the link no longer works. `name` is
  // the button's accessible name, which tells the two lists apart.
  const withdrawButton = (i: Invitation, name: string, path: string) => (
    <ConfirmAction
      label="Withdraw"
      name={name}
      question={`Withdraw the invitation of ${i.email}? Its link stops working.`}
      confirm="Withdraw invitation"
      onConfirm={() =>
        run(async () => {
          await api.send("DELETE", `${path}/${encodeURIComponent(i.id)}`);
          setStatus(`The invitation of ${i.email} is withdrawn: its link no longer works.`);
        })
      }
    />
  );
  // A project moves between two teams its mover owns: the one holding it, and the target.
  const holdsProject = !!(team && props.project && team.projects.includes(props.project.id));
  const targets = props.teams.filter((t) => t.id !== teamId && t.role === "owner");
  const roles = myRole === "owner" ? ["viewer", "editor", "admin", "owner"] : ["viewer", "editor", "admin"];

  return (
    <Modal title="Team and access" onClose={props.onClose} wide>
      <div class="team" data-testid="team-dialog">
        {props.teams.length > 1 && (
          <SelectField
            label="Team"
            value={teamId}
            onValue={setTeamId}
            options={props.teams.map((t) => ({ value: t.id, text: t.name }))}
          />
        )}
        {!teamId && <p>You are not a member of a team: you see the projects you are a guest of.</p>}
        {team && (
          <section aria-labelledby="members-title">
            <h3 id="members-title">
              Members of {team.name}{" "}
              <span class="badge" data-testid="my-role">
                you: {roleLabel(myRole ?? "")}
              </span>
            </h3>
            <table class="members">
              <thead>
                <tr>
                  <th scope="col">Member</th>
                  <th scope="col">Role</th>
                  <th scope="col">
                    <span class="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {team.members.map((m) => {
                  const self = m.id === props.me;
                  const editable = manages && !self && (m.role !== "owner" || myRole === "owner");
                  return (
                    <tr key={m.id} data-member={m.email}>
                      <td>
                        {m.name ? `${m.name} · ` : ""}
                        {m.email}
                        {self ? " (you)" : ""}
                      </td>
                      <td>
                        {editable ? (
                          <select
                            aria-label={`Role of ${m.email}`}
                            value={m.role}
                            onChange={(e) =>
                              void run(() =>
                                api.send("PATCH", `${base}/members/${encodeURIComponent(m.id)}`, {
                                  role: (e.target as HTMLSelectElement).value,
                                }),
                              )
                            }
                          >
                            {roles.map((r) => (
                              <option key={r} value={r}>
                                {roleLabel(r)}
                              </option>
                            ))}
                          </select>
                        ) : (
                          roleLabel(m.role)
                        )}
                      </td>
                      <td>
                        {(editable || self) && (
                          <button
                            type="button"
                            class="link small danger"
                            aria-label={self ? `Leave ${team.name}` : `Remove ${m.email}`}
                            onClick={() =>
                              void run(async () => {
                                await api.send("DELETE", `${base}/members/${encodeURIComponent(m.id)}`);
                                if (self) props.onChanged();
                              })
                            }
                          >
                            {self ? "Leave" : "Remove"}
                          </button>
                        )}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          </section>
        )}
        {team && may(myRole, "manage") && (
          <section aria-labelledby="team-settings-title">
            <h3 id="team-settings-title">Settings of {team.name}</h3>
            <RenameTeam
              key={`${team.id}:${team.name}`}
              team={team}
              onRename={(name) =>
                run(async () => {
                  await api.send("PATCH", base, { name });
                  setStatus(`The team is now named ${name}.`);
                  props.onChanged();
                })
              }
            />
            {props.project && holdsProject && myRole === "owner" && (
              <TransferProject
                key={team.id}
                project={props.project}
                targets={targets}
                onMove={(target) =>
                  run(async () => {
                    await api.send("POST", `/projects/${encodeURIComponent(props.project!.id)}/transfer`, {
                      teamId: target,
                    });
                    const to = props.teams.find((t) => t.id === target)?.name ?? target;
                    setStatus(`${props.project!.name} now belongs to the team ${to}.`);
                    props.onChanged();
                  })
                }
              />
            )}
          </section>
        )}
        {team && manages && (
          <section aria-labelledby="invite-title">
            <h3 id="invite-title">Invite to {team.name}</h3>
            <InviteForm
              label="Email to invite"
              roles={roles}
              onInvite={async (email, role) => {
                const r = await api.send<Invited>("POST", `${base}/invitations`, { email, role });
                await load();
                return r;
              }}
            />
            {pending.length > 0 && (
              <ul class="plain edit-list" aria-label="Pending invitations">
                {pending.map((i) => (
                  <li key={i.id} data-invitation={i.email}>
                    <span>
                      {i.email}: {roleLabel(i.role)}, until {i.expiresAt.slice(0, 10)}
                    </span>
                    {withdrawButton(i, `Withdraw the invitation of ${i.email}`, `${base}/invitations`)}
                  </li>
                ))}
              </ul>
            )}
          </section>
        )}
        {props.project && guests && (
          <section aria-labelledby="guests-title">
            <h3 id="guests-title">Guests of {props.project.name}</h3>
            <p class="help">A guest reads this project only.</p>
            {guests.guests.length > 0 ? (
              <ul class="plain edit-list" aria-label="Guests">
                {guests.guests.map((g) => (
                  <li key={g.id}>
                    <span>{g.email}</span>
                    <button
                      type="button"
                      class="link small"
                      aria-label={`Remove the guest ${g.email}`}
                      onClick={() =>
                        void run(() => api.send("DELETE", `${guestsPath}/${encodeURIComponent(g.id)}`))
                      }
                    >
                      Remove
                    </button>
                  </li>
                ))}
              </ul>
            ) : (
              <p class="note">No guests.</p>
            )}
            {guests.invitations.length > 0 && (
              <ul class="plain edit-list" aria-label="Pending guest invitations">
                {guests.invitations.map((i) => (
                  <li key={i.id} data-invitation={i.email}>
                    <span>
                      {i.email}: invited, until {i.expiresAt.slice(0, 10)}
                    </span>
                    {withdrawButton(
                      i,
                      `Withdraw the guest invitation of ${i.email}`,
                      `${guestsPath}/invitations`,
                    )}
                  </li>
                ))}
              </ul>
            )}
            <InviteForm
              label="Guest's email"
              roles={["guest"]}
              onInvite={async (email) => {
                const r = await api.send<Invited>("POST", guestsPath, { email });
                await load();
                return r;
              }}
            />
          </section>
        )}
        <StatusNote text={status} testid="team-status" />
        <ErrorNote text={error} />
      </div>
    </Modal>
  );
}
