// The svc API from the page: Bearer credential, JSON, JSON errors, a short-lived cache that
// merges identical requests made by several panels at once, and a queue that sends the reads
// of /metrics* no faster than the server admits them.

export type Params = [string, string][];

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
  /** The endpoint does not exist on this server (an older svc): the panel hides. */
  get missing(): boolean {
    return this.status === 404;
  }
}

export type Kind = "admin" | "secret" | "share" | "session" | "none";

export function kindOf(token: string): Kind {
  if (!token) return "none";
  if (token.startsWith("svc_admin_")) return "admin";
  if (token.startsWith("svc_sess_")) return "session";
  if (token.startsWith("svc_share_")) return "share";
  return "secret";
}

const TTL_MS = 5_000;

/** The path svc is mounted under ("" at the root), from the shell's data-base. */
export const BASE = (document.getElementById("app")?.dataset.base ?? "").replace(/\/$/, "");

/** The reads of one project the server runs at once when /health does not say. */
const DEFAULT_SHARE = 2;
let share: Promise<number> | null = null;

/** The server's per-project share of reads (GET /health's `reads.perProject`), asked once;
 * DEFAULT_SHARE when /health does not say it within 3 s. */
export function readShare(): Promise<number> {
  share ??= Promise.race([
    fetch(`${BASE}/health`, { credentials: "omit", cache: "no-store" })
      .then((r) => r.json() as Promise<{ reads?: { perProject?: unknown } }>)
      .then((doc) => {
        const n = doc.reads?.perProject;
        return typeof n === "number" && Number.isInteger(n) && n >= 1 ? n : DEFAULT_SHARE;
      })
      .catch(() => DEFAULT_SHARE),
    new Promise<number>((r) => setTimeout(() => r(DEFAULT_SHARE), 3_000)),
  ]);
  return share;
}

/** Where a read of `path` stands in the queue: the top figures, then realtime, then panels. */
function rankOf(path: string): number {
  if (path === "/metrics") return 0;
  if (path === "/metrics/realtime") return 1;
  return 2;
}

/** Runs tasks at most `limit` at once (none until the limit is known): lowest rank first, then
 * in the order asked. The first start waits a microtask, so that the requests one render asks
 * for together are ranked together. */
class ReadQueue {
  private waiting: { rank: number; run: () => void }[] = [];
  private running = 0;
  private limit = 0;
  private pending = false;

  constructor(limit: Promise<number>) {
    void limit.then((n) => {
      this.limit = n;
      this.pump();
    });
  }

  add<T>(rank: number, task: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const run = () => {
        task()
          .then(resolve, reject)
          .finally(() => {
            this.running--;
            this.pump();
          });
      };
      let i = this.waiting.length;
      while (i > 0 && this.waiting[i - 1]!.rank > rank) i--;
      this.waiting.splice(i, 0, { rank, run });
      if (!this.pending) {
        this.pending = true;
        queueMicrotask(() => {
          this.pending = false;
          this.pump();
        });
      }
    });
  }

  private pump(): void {
    while (this.running < this.limit && this.waiting.length > 0) {
      this.running++;
      this.waiting.shift()!.run();
    }
  }
}

/**
 * The API of one credential.
 *
 * - `get` of the same URL within TTL_MS shares one request (and its answer or error).
 * - `get` of `/metrics*` waits its turn in a queue: at most the server's per-project share of
 *   reads in flight (`readShare`, 2 when unknown), `GET /metrics` (the top figures) ahead of
 *   `/metrics/realtime` ahead of every other read, each rank in the order asked. A read keeps
 *   its place in flight while it waits to be retried.
 * - A 429, or a 503 `busy` (the server's read queue was full), is retried once after its
 *   `Retry-After` (1 s when absent, at most 10 s); a second refusal is the caller's error.
 * - `send` is not queued: writes, and reads outside /metrics.
 */
export class Api {
  private cache = new Map<string, { at: number; value: Promise<unknown> }>();
  private reads = new ReadQueue(readShare());
  /** Called when the server stops accepting the credential (revoked, expired). */
  onUnauthorized: (() => void) | null = null;

  constructor(
    readonly token: string,
    readonly kind: Kind = kindOf(token),
  ) {}

  url(path: string, params: Params = []): string {
    const q = new URLSearchParams(params);
    const s = q.toString();
    return s ? `${path}?${s}` : path;
  }

  /** GET path?params; identical GETs within a few seconds share one request. */
  get<T>(path: string, params: Params = [], fresh = false): Promise<T> {
    const url = this.url(path, params);
    const now = Date.now();
    const hit = this.cache.get(url);
    if (!fresh && hit && now - hit.at < TTL_MS) return hit.value as Promise<T>;
    const value =
      path === "/metrics" || path.startsWith("/metrics/")
        ? this.reads.add(rankOf(path), () => this.send<T>("GET", url))
        : this.send<T>("GET", url);
    this.cache.set(url, { at: now, value });
    value.catch(() => this.cache.delete(url));
    if (this.cache.size > 200) {
      for (const [k, v] of this.cache) if (now - v.at >= TTL_MS) this.cache.delete(k);
    }
    return value;
  }

  async send<T>(method: string, url: string, body?: unknown, retry = 1): Promise<T> {
    const headers: Record<string, string> = {};
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    if (body !== undefined) headers["Content-Type"] = "application/json";
    let res: Response;
    try {
      res = await fetch(BASE + url, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        credentials: "omit",
        cache: "no-store",
      });
    } catch {
      throw new ApiError(0, "network", "The server could not be reached.");
    }
    let doc: unknown = null;
    try {
      doc = await res.json();
    } catch {
      /* not JSON */
    }
    const err = (doc as { error?: { code?: string; message?: string } } | null)?.error;
    if (retry > 0 && (res.status === 429 || (res.status === 503 && err?.code === "busy"))) {
      const wait = Math.min(10, Number(res.headers.get("Retry-After")) || 1);
      await new Promise((r) => setTimeout(r, wait * 1000));
      return this.send<T>(method, url, body, retry - 1);
    }
    if (res.status === 401) this.onUnauthorized?.();
    if (!res.ok) {
      throw new ApiError(res.status, err?.code ?? "http_error", err?.message ?? `HTTP ${res.status}`);
    }
    return doc as T;
  }

  clear(): void {
    this.cache.clear();
  }
}
