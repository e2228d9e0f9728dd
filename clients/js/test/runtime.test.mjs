// The library needs nothing from Node: it runs in a bare JavaScript context that has only what
// Workers, Deno, Bun, edge runtimes and browsers all have (fetch, timers, URL, AbortController).
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import vm from 'node:vm';
import { build } from 'esbuild';

const dist = new URL('../dist/', import.meta.url);

test('the built files import only each other', () => {
  for (const dir of ['esm', 'cjs']) {
    for (const f of readdirSync(new URL(`${dir}/`, dist)).filter((f) => f.endsWith('.js'))) {
      const src = readFileSync(new URL(`${dir}/${f}`, dist), 'utf8');
      const imports = [
        ...src.matchAll(/^(?:import|export)\b[^;]*?from\s*['"]([^'"]+)['"]/gm),
        ...src.matchAll(/^(?:import)\s*['"]([^'"]+)['"]/gm),
        ...src.matchAll(/\brequire\(\s*['"]([^'"]+)['"]\s*\)/g),
        ...src.matchAll(/\bimport\(/g),
      ].map((m) => m[1] ?? 'a dynamic import()');
      for (const spec of imports) assert.match(spec, /^\.\/[a-z]+\.js$/, `${dir}/${f} imports ${spec}`);
    }
  }
});

test('it runs in a bare context without process, Buffer or require', async () => {
  const out = await build({
    entryPoints: [new URL('esm/index.js', dist).pathname],
    bundle: true,
    format: 'iife',
    globalName: 'svcLib',
    platform: 'neutral',
    write: false,
  });
  const sent = [];
  const context = vm.createContext({
    fetch: async (url, init) => {
      sent.push({ url, init });
      return new Response(JSON.stringify({ ok: true, ts: Date.now(), accepted: 1, rejected: [] }), { status: 200 });
    },
    setTimeout,
    clearTimeout,
    URL,
    AbortController,
    console,
  });
  vm.runInContext(out.outputFiles[0].text, context);
  const result = await vm.runInContext(
    `(async () => {
      const c = svcLib.createClient({ apiKey: 'svc_live_k', projectId: 'svc_proj_p', endpoint: 'https://svc.example/analytics' });
      c.pageView('/edge');
      c.captureException(new Error('edge boom'));
      await c.flush();
      return { stats: c.stats(), hasProcess: typeof process, hasCrypto: typeof crypto };
    })()`,
    context,
  );
  assert.equal(result.hasProcess, 'undefined');
  assert.equal(result.hasCrypto, 'undefined');
  assert.equal(result.stats.sent, 2);
  assert.equal(sent.length, 1);
  const events = JSON.parse(sent[0].init.body).events;
  assert.deepEqual(events.map((e) => e.event), ['page_view', 'exception']);
  assert.match(events[0].eventId, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
});
