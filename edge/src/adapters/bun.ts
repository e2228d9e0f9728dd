// Bun: `PORT=8787 bun server.js`. Configuration from the environment (SVC_ORIGIN,
// SVC_EDGE_SECRET, ...), else baked in. The visitor: the socket's address, or, when the peer is
// a trusted proxy (SVC_EDGE_TRUSTED_PROXIES: CIDRs, comma-separated), the right-most
// X-Forwarded-For hop that is not one. Bun knows no location: the origin finds the country
// from the address.

import { configFrom, createHandler } from '../handler';
import { trustedHop } from '../net';

const env = Bun.env as Record<string, unknown>;
const handler = createHandler(configFrom(env, SVC_EDGE_CONFIG, 'bun'));
const trusted = String(env['SVC_EDGE_TRUSTED_PROXIES'] ?? SVC_EDGE_CONFIG['SVC_EDGE_TRUSTED_PROXIES'] ?? '');

const server = Bun.serve({
  port: Number(env['PORT'] ?? 8787),
  hostname: String(env['HOST'] ?? '0.0.0.0'),
  fetch(request, srv) {
    const peer = srv.requestIP(request)?.address ?? '';
    const ip = trustedHop(peer, request.headers.get('x-forwarded-for'), trusted);
    return handler(request, ip ? { ip } : null);
  },
});

console.log(`svc edge (bun) listening on port ${server.port}, origin ${handler.config.origin || '(none)'}`);
