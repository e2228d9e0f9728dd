// Runs a Vercel Edge bundle (ESM, as in .vercel/output/functions/*.func/index.js) in
// edge-runtime, Vercel's own runtime for Node: the bundle becomes a script (esbuild, IIFE),
// evaluated in an EdgeVM with a fetch listener that calls its default export.
//
//   node edge-runtime-server.mjs BUNDLE PORT [ENV_JSON]
import { EdgeRuntime, runServer } from 'edge-runtime';
import { build } from 'esbuild';

const [bundle, port, envJson = '{}'] = process.argv.slice(2);
const result = await build({
  entryPoints: [bundle],
  bundle: true,
  format: 'iife',
  globalName: '__svcEdge',
  platform: 'neutral',
  target: 'es2022',
  write: false,
  logLevel: 'warning',
});
const initialCode =
  result.outputFiles[0].text +
  '\naddEventListener("fetch", (event) => event.respondWith(__svcEdge.default(event.request)));';
const env = JSON.parse(envJson);
const runtime = new EdgeRuntime({
  initialCode,
  extend: (context) => Object.assign(context, { process: { env } }),
});
const server = await runServer({ runtime, port: Number(port), host: '127.0.0.1' });
console.log(`edge-runtime listening on ${server.url}`);
const stop = async () => {
  await server.close();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
