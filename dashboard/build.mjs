// Builds the dashboard into the Python package: src/svc/static/dashboard/ gets content-hashed
// files (served immutable at /dashboard/assets/<name>) and manifest.json, which svc reads to
// write the HTML shell. `--size` prints raw and gzipped sizes and fails past the budget.
import { build } from "esbuild";
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";

const here = dirname(fileURLToPath(import.meta.url));
const outArg = process.argv.indexOf("--out");
const out =
  outArg > 0 ? resolve(process.argv[outArg + 1]) : join(here, "..", "src", "svc", "static", "dashboard");
const BUDGET_GZIP = 150 * 1024;

// The projected world map (build-time data from world-atlas).
const map = join(here, ".cache", "world.json");
const mapScript = join(here, "scripts", "make-map.mjs");
if (!existsSync(map) || statSync(mapScript).mtimeMs > statSync(map).mtimeMs) {
  execFileSync(process.execPath, [mapScript, map], { stdio: "inherit", cwd: here });
}

const result = await build({
  entryPoints: [join(here, "src", "main.tsx")],
  bundle: true,
  splitting: true,
  format: "esm",
  minify: true,
  sourcemap: false,
  target: ["es2020", "chrome91", "firefox90", "safari15"],
  jsx: "automatic",
  jsxImportSource: "preact",
  entryNames: "[name]-[hash]",
  chunkNames: "[name]-[hash]",
  assetNames: "[name]-[hash]",
  outdir: out,
  write: false,
  metafile: true,
  legalComments: "eof",
  charset: "utf8",
  logLevel: "warning",
});

mkdirSync(out, { recursive: true });
for (const f of readdirSync(out)) rmSync(join(out, f), { recursive: true, force: true });

const files = {};
let entry = "";
const css = [];
let totalRaw = 0;
let totalGzip = 0;
for (const f of result.outputFiles) {
  const name = basename(f.path);
  writeFileSync(f.path, f.contents);
  const gz = gzipSync(f.contents, { level: 9 }).length;
  files[name] = { bytes: f.contents.length, gzip: gz };
  totalRaw += f.contents.length;
  totalGzip += gz;
  const meta =
    result.metafile.outputs[Object.keys(result.metafile.outputs).find((k) => basename(k) === name)];
  if (meta?.entryPoint?.endsWith("src/main.tsx") && name.endsWith(".js")) entry = name;
  if (name.endsWith(".css")) css.push(name);
}
// Chunks the entry imports statically: the shell preloads them beside the entry.
const entryMeta = Object.entries(result.metafile.outputs).find(([k]) => basename(k) === entry)?.[1];
const preload = (entryMeta?.imports ?? [])
  .filter((i) => i.kind === "import-statement")
  .map((i) => basename(i.path));
const manifest = { entry, css, preload, files, totalBytes: totalRaw, totalGzip };
writeFileSync(join(out, "manifest.json"), JSON.stringify(manifest, null, 2) + "\n");

if (process.argv.includes("--size")) {
  for (const [name, s] of Object.entries(files)) {
    console.log(
      `${name.padEnd(28)} ${String(s.bytes).padStart(8)} B  ${String(s.gzip).padStart(7)} B gzipped`,
    );
  }
  console.log(
    `${"total".padEnd(28)} ${String(totalRaw).padStart(8)} B  ${String(totalGzip).padStart(7)} B gzipped (budget ${BUDGET_GZIP})`,
  );
} else {
  console.log(
    `dashboard: ${Object.keys(files).length} files, ${totalRaw} B, ${totalGzip} B gzipped -> ${out}`,
  );
}
if (totalGzip > BUDGET_GZIP) {
  console.error(`dashboard: ${totalGzip} B gzipped is over the ${BUDGET_GZIP} B budget`);
  process.exit(1);
}
