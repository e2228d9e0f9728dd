// The exact bytes the client sends for the reference calls, shared with the Python client's
// byte-compatibility test: test/fixtures/wire-body.json, with `ts` written as 0 and `eventId` as
// "<eventId>" (both differ on every call), and a fixed stack.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { makeClient } from './helpers.mjs';

const fixture = new URL('./fixtures/wire-body.json', import.meta.url);

export function normalize(body) {
  return body.replace(/"ts":\d+/g, '"ts":0').replace(/"eventId":"[^"]*"/g, '"eventId":"<eventId>"');
}

test('the reference calls send exactly the bytes of fixtures/wire-body.json', async () => {
  const { client, fetch } = makeClient({ projectId: 'svc_proj_jsclient' });
  const boom = new Error('boom');
  boom.stack = 'Error: boom\n    at main (/app/index.js:1:7)';
  client.track('signup', { plan: 'pro' });
  client.pageView('/pricing');
  client.purchase('T1', 30, 'EUR', [{ item_id: 'sku1', price: 10, quantity: 3 }]);
  client.captureException(boom, { fatal: true });
  await client.flush();
  assert.equal(fetch.calls.length, 1);
  const body = fetch.calls[0].body;
  const expected = readFileSync(fixture, 'utf8').trimEnd();
  if (process.env.SVC_WRITE_FIXTURE) {
    const { writeFileSync } = await import('node:fs');
    writeFileSync(fixture, normalize(body) + '\n');
  }
  assert.equal(normalize(body), expected);
  // What normalize() hides: an integer ms timestamp and a UUID per event.
  for (const ev of JSON.parse(body).events) {
    assert.ok(Number.isInteger(ev.ts));
    assert.match(ev.eventId, /^[0-9a-f-]{36}$/);
  }
  await client.shutdown();
});
