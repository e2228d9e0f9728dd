// The svc API from the page: Bearer credential, JSON, JSON errors, a short-lived cache that
// merges identical requests made by several panels at once.

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

export class Api {
  private cache = new Map<string, { at: number; value: Promise<unknown> }>();
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
    const value = this.send<T>("GET", url);
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
    if (res.status === 429 && retry > 0) {
      const wait = Math.min(10, Number(res.headers.get("Retry-After")) || 1);
      await new Promise((r) => setTimeout(r, wait * 1000));
      return this.send<T>(method, url, body, retry - 1);
    }
    let doc: unknown = null;
    try {
      doc = await res.json();
    } catch {
      /* not JSON */
    }
    if (res.status === 401) this.onUnauthorized?.();
    if (!res.ok) {
      const err = (doc as { error?: { code?: string; message?: string } } | null)?.error;
      throw new ApiError(res.status, err?.code ?? "http_error", err?.message ?? `HTTP ${res.status}`);
    }
    return doc as T;
  }

  clear(): void {
    this.cache.clear();
  }
}
