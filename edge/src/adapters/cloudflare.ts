// Cloudflare Workers: a module worker. Configuration from the worker's variables and secrets
// (wrangler.toml [vars], `wrangler secret put SVC_EDGE_SECRET`), else baked in.
// The visitor: CF-Connecting-IP (set by Cloudflare, never the client's) and request.cf.

import { configFrom, createHandler, type Handler, type EnvLike } from '../handler';

interface CfProperties {
  country?: string;
  regionCode?: string;
  city?: string;
}

let handler: Handler | null = null;

export default {
  async fetch(request: Request, env: EnvLike): Promise<Response> {
    handler ??= createHandler(configFrom(env, SVC_EDGE_CONFIG, 'cloudflare-workers'));
    const ip = request.headers.get('cf-connecting-ip');
    const cf = ((request as unknown as { cf?: CfProperties }).cf ?? {}) as CfProperties;
    const visitor = ip
      ? {
          ip,
          country: cf.country ?? request.headers.get('cf-ipcountry'),
          region: cf.regionCode ?? null,
          city: cf.city ?? null,
        }
      : null;
    return handler(request, visitor);
  },
};
