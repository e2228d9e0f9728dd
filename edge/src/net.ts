// Addresses and CIDRs, for the Bun adapter's trusted proxies.

function v4(text: string): bigint | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  let n = 0n;
  for (const p of parts) {
    if (!/^\d{1,3}$/.test(p) || Number(p) > 255) return null;
    n = (n << 8n) | BigInt(Number(p));
  }
  return n;
}

/** An address as [bits, width]: IPv4 (and IPv4-mapped IPv6) as 32 bits, else 128. */
export function parseIp(text: string): [bigint, number] | null {
  let t = text.trim().replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(t);
  if (mapped) t = mapped[1]!;
  if (t.includes('.') && !t.includes(':')) {
    const n = v4(t);
    return n === null ? null : [n, 32];
  }
  if (!t.includes(':')) return null;
  let tail: bigint[] = [];
  const dot = t.lastIndexOf(':');
  if (t.slice(dot + 1).includes('.')) {
    const n = v4(t.slice(dot + 1));
    if (n === null) return null;
    tail = [n >> 16n, n & 0xffffn];
    t = t.slice(0, dot + 1) + '0:0';
  }
  const halves = t.split('::');
  if (halves.length > 2) return null;
  const groups = (s: string) => (s === '' ? [] : s.split(':'));
  const head = groups(halves[0]!);
  const rest = halves.length === 2 ? groups(halves[1]!) : [];
  const missing = 8 - head.length - rest.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const all = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...rest];
  let n = 0n;
  for (const g of all) {
    if (!/^[0-9a-f]{1,4}$/i.test(g)) return null;
    n = (n << 16n) | BigInt(parseInt(g, 16));
  }
  if (tail.length) n = (n & ~0xffffffffn) | (tail[0]! << 16n) | tail[1]!;
  return [n, 128];
}

export function inCidrs(address: string, cidrs: string): boolean {
  const ip = parseIp(address);
  if (!ip) return false;
  for (const raw of cidrs.split(',')) {
    const c = raw.trim();
    if (!c) continue;
    const [base, bitsText] = c.split('/');
    const net = parseIp(base!);
    if (!net || net[1] !== ip[1]) continue;
    const bits = bitsText === undefined ? net[1] : Number(bitsText);
    const shift = BigInt(net[1] - bits);
    if (bits >= 0 && bits <= net[1] && ip[0] >> shift === net[0] >> shift) return true;
  }
  return false;
}

/** The client: the peer, or when the peer is trusted, the right-most X-Forwarded-For hop that
 * is not trusted (as the origin's SVC_TRUSTED_PROXIES). */
export function trustedHop(peer: string, forwardedFor: string | null, cidrs: string): string {
  const clean = peer.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/i, '$1');
  if (!cidrs || !forwardedFor || !inCidrs(peer, cidrs)) return clean;
  const hops = forwardedFor.split(',').map((h) => h.trim()).filter(Boolean);
  for (let i = hops.length - 1; i >= 0; i--) {
    if (!inCidrs(hops[i]!, cidrs)) return parseIp(hops[i]!) ? hops[i]! : clean;
  }
  return clean;
}
