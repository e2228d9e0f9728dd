// What the client needs from its host, looked up on globalThis so that the library imports
// nothing and runs in Node, Bun, Deno, Workers, edge runtimes and browsers alike.

interface Timer {
  unref?: () => void;
}

interface EventTargetLike {
  addEventListener?(type: string, listener: () => void): void;
  removeEventListener?(type: string, listener: () => void): void;
}

interface Host {
  fetch?: (url: string, init: unknown) => Promise<unknown>;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  crypto?: {
    randomUUID?: () => string;
    getRandomValues?: (array: Uint8Array) => Uint8Array;
  };
  AbortController?: new () => { signal: unknown; abort(): void };
  location?: { href?: string };
  document?: EventTargetLike & { referrer?: string; visibilityState?: string };
  console?: { warn?: (...args: unknown[]) => void };
  Deno?: { unrefTimer?: (id: number) => void };
  process?: { on?: (event: string, listener: () => void) => unknown };
  URL?: new (url: string, base?: string) => unknown;
  addEventListener?(type: string, listener: () => void): void;
  removeEventListener?(type: string, listener: () => void): void;
}

/** @internal */
export const host = globalThis as unknown as Host;

/** @internal Whether this looks like a web page (not a worker or a server). */
export function inBrowser(): boolean {
  return typeof host.document === 'object' && host.document !== null && typeof host.location === 'object';
}

/** @internal A timer that does not keep a Node, Bun or Deno process alive. */
export function idleTimer(fn: () => void, ms: number): unknown {
  const handle = host.setTimeout(fn, ms);
  if (handle && typeof (handle as Timer).unref === 'function') {
    (handle as Timer).unref!();
  } else if (typeof handle === 'number' && host.Deno && typeof host.Deno.unrefTimer === 'function') {
    host.Deno.unrefTimer(handle);
  }
  return handle;
}

/** @internal A random RFC 4122 version 4 UUID. */
export function uuid(): string {
  const c = host.crypto;
  if (c && typeof c.randomUUID === 'function') {
    try {
      return c.randomUUID();
    } catch {
      // Browsers outside a secure context: fall through.
    }
  }
  const b = new Uint8Array(16);
  if (c && typeof c.getRandomValues === 'function') {
    c.getRandomValues(b);
  } else {
    for (let i = 0; i < 16; i++) b[i] = (Math.random() * 256) | 0;
  }
  b[6] = (b[6]! & 0x0f) | 0x40;
  b[8] = (b[8]! & 0x3f) | 0x80;
  let s = '';
  for (let i = 0; i < 16; i++) {
    s += (b[i]! + 0x100).toString(16).slice(1);
    if (i === 3 || i === 5 || i === 7 || i === 9) s += '-';
  }
  return s;
}

/** @internal Length of a string in UTF-8 bytes. */
export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 4;
        i++;
      } else n += 3;
    } else n += 3;
  }
  return n;
}

const exitHooks = new Set<() => void>();
let exitHooked = false;

/** @internal Runs `fn` when a Node or Bun process is about to exit with nothing left to do,
 * while `fn` is registered. One process listener serves every client. */
export function onBeforeExit(fn: () => void): void {
  exitHooks.add(fn);
  if (!exitHooked) {
    const proc = host.process;
    if (proc && typeof proc.on === 'function') {
      exitHooked = true;
      proc.on('beforeExit', () => {
        exitHooks.forEach((f) => f());
      });
    }
  }
}

/** @internal */
export function offBeforeExit(fn: () => void): void {
  exitHooks.delete(fn);
}
