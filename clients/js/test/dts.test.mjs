// The built declaration files type-check for both an ES module and a CommonJS consumer that
// import the package by its name (resolved through package.json "exports").
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

test('dist .d.ts files serve ESM and CommonJS consumers', () => {
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const config = fileURLToPath(new URL('./types/tsconfig.dist.json', import.meta.url));
  const r = spawnSync(process.execPath, [tsc, '-p', config, '--traceResolution'], { encoding: 'utf8', timeout: 120_000 });
  const errors = r.stdout.split('\n').filter((l) => l.includes('error TS'));
  assert.equal(r.status, 0, errors.join('\n') || r.stderr);
  assert.match(r.stdout, /Module name 'svc' was successfully resolved to '[^']*dist\/esm\/index\.d\.ts'/);
  assert.match(r.stdout, /Module name 'svc' was successfully resolved to '[^']*dist\/cjs\/index\.d\.ts'/);
});
