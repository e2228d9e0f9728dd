// Prints the size of the library as a browser bundle would carry it: minified, and gzipped.
import { build } from 'esbuild';
import { gzipSync } from 'node:zlib';

const out = await build({
  entryPoints: [new URL('../dist/esm/index.js', import.meta.url).pathname],
  bundle: true,
  minify: true,
  format: 'esm',
  target: 'es2020',
  write: false,
});
const code = out.outputFiles[0].contents;
console.log(`svc: ${code.length} B minified, ${gzipSync(code, { level: 9 }).length} B gzipped`);
