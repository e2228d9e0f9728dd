// Minifies src/svc.js with terser into ../src/svc/static/: svc.js, the default
// build the Python package serves at /svc/js, and one file per combination of
// the opt-in extensions, svc.<names>.js (names sorted, joined by "."), served
// at /svc/js/<names>.
//
//   node build.mjs              build every file
//   node build.mjs --size       build and print the sizes, and what each
//                               extension adds to the default build
//   node build.mjs --check      build, print the sizes, exit 1 above a budget
//   node build.mjs --out=DIR    write the files to DIR instead (to compare)
import { readFile, writeFile, mkdir, readdir, unlink } from "node:fs/promises";
import { resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync, brotliCompressSync, constants } from "node:zlib";
import { minify } from "terser";

const here = dirname(fileURLToPath(import.meta.url));
const args = process.argv.slice(2);
const outArg = args.find((a) => a.startsWith("--out="));
const source = resolve(here, "src/svc.js");
const targetDir = outArg
  ? resolve(outArg.slice("--out=".length))
  : resolve(here, "../src/svc/static");

// The default build's budget (issue 4); every combination of extensions stays
// within the specification's limit (issue 20).
const LIMIT_MIN = 1024;
const LIMIT_GZ = 600;
const LIMIT_SPEC = 2048;

// Extension name (in the URL and the file name) -> its constant in src/svc.js.
// src/svc/http/script.py knows the same names.
const EXTENSIONS = {
  404: "NOT_FOUND",
  downloads: "DOWNLOADS",
  engagement: "ENGAGEMENT",
  outbound: "OUTBOUND",
  vitals: "VITALS",
};
const NAMES = Object.keys(EXTENSIONS).sort();

const fileName = (names) => (names.length ? `svc.${names.join(".")}.js` : "svc.js");

const text = await readFile(source, "utf8");
const build = async (names) => {
  const global_defs = {};
  for (const [name, constant] of Object.entries(EXTENSIONS))
    global_defs[constant] = names.includes(name);
  global_defs.EXTENDED = names.some((name) => name != "404");
  const { code } = await minify(text, {
    ecma: 2020,
    toplevel: true,
    compress: {
      global_defs,
      passes: 3,
      unsafe: true,
      unsafe_arrows: true,
      pure_getters: true,
      booleans_as_integers: true,
      keep_fargs: false,
    },
    mangle: true,
    format: { comments: false },
  });
  return Buffer.from(code.trimEnd() + "\n");
};

const sizes = (out) => ({
  min: out.length,
  gz: gzipSync(out, { level: 9 }).length,
  br: brotliCompressSync(out, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }).length,
});

// Every subset of the extensions, the default (none) first.
const combinations = [];
for (let mask = 0; mask < 1 << NAMES.length; mask++)
  combinations.push(NAMES.filter((_, i) => mask & (1 << i)));

await mkdir(targetDir, { recursive: true });
const built = {};
for (const names of combinations) {
  const out = await build(names);
  await writeFile(resolve(targetDir, fileName(names)), out);
  built[names.join(".")] = { names, ...sizes(out) };
}
// A combination that no longer exists leaves no stale file behind.
const wanted = new Set(combinations.map(fileName));
for (const file of await readdir(targetDir))
  if (/^svc\..+\.js$/.test(file) && !wanted.has(file)) await unlink(resolve(targetDir, file));

const base = built[""];
const over = Object.values(built).filter((b) =>
  b.names.length ? b.min > LIMIT_SPEC : b.min > LIMIT_MIN || b.gz > LIMIT_GZ,
);
if (args.includes("--size") || args.includes("--check")) {
  console.log(
    `svc.js: ${base.min} bytes minified, ${base.gz} gzipped, ${base.br} brotli` +
      ` (budget ${LIMIT_MIN} / ${LIMIT_GZ}; Plausible 1,341 minified, Umami 2,442 / 1,399)`,
  );
  for (const name of NAMES) {
    const b = built[name];
    console.log(
      `  +${name}: ${b.min} minified (+${b.min - base.min}), ${b.gz} gzipped` +
        ` (+${b.gz - base.gz}), ${b.br} brotli (+${b.br - base.br})`,
    );
  }
  const all = built[NAMES.join(".")];
  const largest = Object.values(built).reduce((a, b) => (b.min > a.min ? b : a));
  console.log(
    `  all five: ${all.min} minified, ${all.gz} gzipped, ${all.br} brotli;` +
      ` the largest of the ${combinations.length} builds: ${largest.min} minified` +
      ` (limit ${LIMIT_SPEC})`,
  );
}
if (args.includes("--check") && over.length) {
  for (const b of over)
    console.error(`${fileName(b.names)} is over budget: ${b.min} bytes minified, ${b.gz} gzipped`);
  process.exit(1);
}
