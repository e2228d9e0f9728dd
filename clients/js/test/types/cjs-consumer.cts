// Type-checked against the built dist/cjs/*.d.ts (test/dts.test.mjs).
import svc = require('svc');
const c: svc.SvcClient = svc.createClient({ apiKey: 'k', projectId: 'p', endpoint: 'https://svc.example/analytics' });
c.captureException(new Error('boom'), { fatal: true });
export const isError = (e: unknown): e is svc.SvcError => e instanceof svc.SvcError;
