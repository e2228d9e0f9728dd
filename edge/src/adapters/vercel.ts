// Vercel Edge Functions (Build Output API v3, runtime "edge"). Configuration from process.env
// where the runtime has it, else baked in. The visitor: x-real-ip and the x-vercel-ip-*
// headers, which Vercel sets itself (a client's own are replaced).

import { configFrom, createHandler, type Handler } from '../handler';

let handler: Handler | null = null;

function env(): Record<string, unknown> | undefined {
  const p = (globalThis as { process?: { env?: Record<string, unknown> } }).process;
  return p && p.env ? p.env : undefined;
}

function decoded(value: string | null): string | null {
  if (!value) return null;
  try {
    return decodeURIComponent(value); // Vercel percent-encodes the city
  } catch {
    return value;
  }
}

export default async function svcEdge(request: Request): Promise<Response> {
  handler ??= createHandler(configFrom(env(), SVC_EDGE_CONFIG, 'vercel-edge'));
  const h = request.headers;
  const ip = h.get('x-real-ip') ?? h.get('x-forwarded-for')?.split(',')[0]?.trim() ?? '';
  const visitor = ip
    ? {
        ip,
        country: h.get('x-vercel-ip-country'),
        region: h.get('x-vercel-ip-country-region'),
        city: decoded(h.get('x-vercel-ip-city')),
      }
    : null;
  return handler(request, visitor);
}

export const config = { runtime: 'edge' };
