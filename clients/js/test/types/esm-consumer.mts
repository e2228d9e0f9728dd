// Type-checked against the built dist/esm/*.d.ts (test/dts.test.mjs).
import { createClient, SvcError, type SvcClient } from 'svc';
const c: SvcClient = createClient({ apiKey: 'k', projectId: 'p', endpoint: 'https://svc.example/analytics' });
c.purchase('T1', 30, 'EUR', [{ item_id: 'sku1', price: 10, quantity: 3 }]);
export const isError = (e: unknown): e is SvcError => e instanceof SvcError;
// The global fetch (DOM lib) fits the fetch option as it is, and so does a wrapper.
createClient({ apiKey: 'k', projectId: 'p', endpoint: 'https://svc.example/analytics', fetch });
createClient({
  apiKey: 'k',
  projectId: 'p',
  endpoint: 'https://svc.example/analytics',
  fetch: (url, init) => fetch(url, { ...init, headers: { ...init.headers, 'X-Trace': '1' } }),
});
