// Builds the edge bundles, one file per platform, into src/svc/static/edge/ (committed, so that
// `svcm deploy --edge` works from an installed package without Node).
//
//   node build.mjs            build
//   node build.mjs --check    build into a temporary folder; fail if the committed files differ
//   node build.mjs --out=DIR  build into DIR
//
// The first lines of every bundle hold the configuration that `svcm deploy` bakes in:
//   const SVC_EDGE_CONFIG = {};
import { build } from 'esbuild';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const committed = join(here, '..', 'src', 'svc', 'static', 'edge');
const args = process.argv.slice(2);
const check = args.includes('--check');
const outArg = args.find((a) => a.startsWith('--out='));
const out = check ? mkdtempSync(join(tmpdir(), 'svc-edge-')) : outArg ? outArg.slice(6) : committed;

export const TARGETS = [
  { platform: 'cloudflare-workers', entry: 'src/adapters/cloudflare.ts', file: 'cloudflare.js', esPlatform: 'neutral' },
  { platform: 'vercel-edge', entry: 'src/adapters/vercel.ts', file: 'vercel.js', esPlatform: 'neutral' },
  { platform: 'lambda-edge', entry: 'src/adapters/lambda.ts', file: 'lambda.mjs', esPlatform: 'node' },
  { platform: 'bun', entry: 'src/adapters/bun.ts', file: 'bun.js', esPlatform: 'neutral' },
];

for (const t of TARGETS) {
  await build({
    entryPoints: [join(here, t.entry)],
    outfile: join(out, t.file),
    bundle: true,
    format: 'esm',
    platform: t.esPlatform,
    target: t.esPlatform === 'node' ? 'node20' : 'es2022',
    minify: true,
    legalComments: 'none',
    logLevel: 'warning',
    banner: {
      js: `// svc edge, ${t.platform} (built from edge/src by edge/build.mjs; docs/edge.md)\nconst SVC_EDGE_CONFIG = {};`,
    },
  });
}

if (check) {
  const bad = [];
  for (const name of readdirSync(out)) {
    let old = null;
    try {
      old = readFileSync(join(committed, name));
    } catch {}
    if (old === null || !old.equals(readFileSync(join(out, name)))) bad.push(name);
  }
  rmSync(out, { recursive: true, force: true });
  if (bad.length) {
    console.error(`edge: ${bad.join(', ')} in src/svc/static/edge/ differ from edge/src: run make edge and commit`);
    process.exit(1);
  }
  console.log('edge: the committed bundles match edge/src');
} else {
  for (const t of TARGETS) {
    const size = readFileSync(join(out, t.file)).length;
    console.log(`edge: ${join(out, t.file)} ${size} bytes`);
  }
}
