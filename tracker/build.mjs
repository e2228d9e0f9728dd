// Minifies src/svc.js into ../src/svc/static/svc.js, the file the Python
// package serves at /svc/js. `node build.mjs --size` also prints the sizes
// (`--check` exits non-zero above the budget: 1,024 bytes minified, 600 gzipped).
import { readFile, writeFile, mkdir } from "node:fs/promises";
import { gzipSync, brotliCompressSync, constants } from "node:zlib";
import { minify } from "terser";

const here = new URL(".", import.meta.url);
const source = new URL("src/svc.js", here);
const target = new URL("../src/svc/static/svc.js", here);
const LIMIT_MIN = 1024;
const LIMIT_GZ = 600;

const { code } = await minify(await readFile(source, "utf8"), {
  ecma: 2020,
  toplevel: true,
  compress: {
    passes: 3,
    unsafe: true,
    unsafe_arrows: true,
    pure_getters: true,
    booleans_as_integers: true,
  },
  mangle: true,
  format: { comments: false },
});
const out = code.trimEnd() + "\n";
await mkdir(new URL(".", target), { recursive: true });
await writeFile(target, out);

const bytes = Buffer.from(out);
const gz = gzipSync(bytes, { level: 9 }).length;
const br = brotliCompressSync(bytes, {
  params: { [constants.BROTLI_PARAM_QUALITY]: 11 },
}).length;
const args = process.argv.slice(2);
if (args.includes("--size") || args.includes("--check")) {
  console.log(`svc.js: ${bytes.length} bytes minified, ${gz} gzipped, ${br} brotli`);
  console.log(`budget: ${LIMIT_MIN} minified, ${LIMIT_GZ} gzipped (Plausible 1,341 minified; Umami 2,442 / 1,399)`);
}
if (args.includes("--check") && (bytes.length > LIMIT_MIN || gz > LIMIT_GZ)) {
  console.error("svc.js is over budget");
  process.exit(1);
}
