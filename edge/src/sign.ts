// Signed edge headers: the visitor's address and location, sent by the edge to the origin with
// an HMAC-SHA256 over the request, keyed with the secret the two share (SVC_EDGE_SECRET).
// The origin's side is src/svc/http/edge_signature.py (checked by edge_auth.py); the format is
// documented in docs/edge.md.

export const VERSION = 'v1';

/** What the edge knows of the visitor from its platform. */
export interface Visitor {
  ip: string;
  country?: string | null;
  region?: string | null;
  city?: string | null;
}

export interface SignedRequest {
  method: string;
  /** path and query, as sent to the origin: `/analytics?key=...` */
  target: string;
  body: Uint8Array<ArrayBuffer>;
  authorization: string;
  userAgent: string;
}

const encoder = new TextEncoder();
const keys = new Map<string, Promise<CryptoKey>>();

function hex(buffer: ArrayBuffer): string {
  const bytes = new Uint8Array(buffer);
  let out = '';
  for (let i = 0; i < bytes.length; i++) out += bytes[i]!.toString(16).padStart(2, '0');
  return out;
}

/** A header value: printable ASCII, so that every runtime sends it byte for byte. */
export function headerValue(value: string | null | undefined, max = 200): string {
  if (!value) return '';
  const text = value.trim().slice(0, max);
  // printable ASCII as it is (a platform's percent-encoded city too: the origin decodes it),
  // anything else percent-encoded as UTF-8
  return /^[\x20-\x7e]*$/.test(text) ? text : encodeURIComponent(text);
}

/** `svc_edge_<id>_<random>` names its key id; any other secret has the id "". */
export function keyId(secret: string): string {
  const m = /^svc_edge_([A-Za-z0-9]+)_[A-Za-z0-9]+$/.exec(secret);
  return m ? m[1]! : '';
}

function key(secret: string): Promise<CryptoKey> {
  let k = keys.get(secret);
  if (!k) {
    k = crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, [
      'sign',
    ]);
    keys.set(secret, k);
  }
  return k;
}

/** A new nonce: 16 random bytes in hex. It makes every forward's signature unique, so that
 * the origin can tell a replayed request (the same signature again) from a second request that
 * only happens to be the same in the same second. */
export function newNonce(): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return hex(bytes.buffer);
}

/**
 * The text that is signed: every line is what the origin sees (header values as sent, the
 * body's SHA-256), so that no part of the request can be changed or moved to another request.
 * The nonce is the last line, when there is one (every edge built from this source sends one).
 */
export function canonical(
  kid: string,
  ts: string,
  req: SignedRequest,
  bodyHash: string,
  fields: readonly string[],
  nonce = '',
): string {
  const lines = [
    `svc-edge-${VERSION}`,
    kid,
    ts,
    req.method.toUpperCase(),
    req.target,
    bodyHash,
    req.authorization,
    req.userAgent,
    ...fields,
  ];
  if (nonce) lines.push(nonce);
  return lines.join('\n');
}

/** The x-svc-edge-* headers for a request (to add to what is sent to the origin). */
export async function edgeHeaders(
  secret: string,
  req: SignedRequest,
  visitor: Visitor,
  nowMs: number = Date.now(),
  nonce: string = newNonce(),
): Promise<Record<string, string>> {
  const fields = [
    headerValue(visitor.ip, 64),
    headerValue(visitor.country, 8).toUpperCase(),
    headerValue(visitor.region, 16),
    headerValue(visitor.city, 300),
  ];
  const ts = String(Math.floor(nowMs / 1000));
  const kid = keyId(secret);
  const bodyHash = hex(await crypto.subtle.digest('SHA-256', req.body));
  const text = canonical(kid, ts, req, bodyHash, fields, nonce);
  const signature = hex(await crypto.subtle.sign('HMAC', await key(secret), encoder.encode(text)));
  const out: Record<string, string> = {
    'x-svc-edge-ip': fields[0]!,
    'x-svc-edge-ts': ts,
    'x-svc-edge-nonce': nonce,
    'x-svc-edge-signature': `${VERSION}=${signature}`,
  };
  if (kid) out['x-svc-edge-kid'] = kid;
  if (fields[1]) out['x-svc-edge-country'] = fields[1];
  if (fields[2]) out['x-svc-edge-region'] = fields[2];
  if (fields[3]) out['x-svc-edge-city'] = fields[3];
  return out;
}
