// Builds the world map of the Countries panel: Natural Earth 1:110m countries (world-atlas),
// projected once at build time (Natural Earth projection, d3-geo) into SVG path strings keyed
// by ISO 3166-1 alpha-2 code, with relative integer coordinates to keep it small.
// Output: a JSON object {width, height, paths: {CC: "m..."}} written to the path given as
// the first argument (default .cache/world.json). Antarctica is left out.
import { readFileSync, writeFileSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { createRequire } from "node:module";
import { geoNaturalEarth1, geoPath } from "d3-geo";
import { feature } from "topojson-client";

const require = createRequire(import.meta.url);
const countries = require("i18n-iso-countries");
const topo = JSON.parse(readFileSync(require.resolve("world-atlas/countries-110m.json"), "utf8"));

const WIDTH = 1000;
const byName = { Kosovo: "XK", "N. Cyprus": "CY", Somaliland: "SO" };
const world = feature(topo, topo.objects.countries);
const features = world.features.filter((f) => f.id !== "010");
const projection = geoNaturalEarth1().fitWidth(WIDTH, { type: "FeatureCollection", features });
const path = geoPath(projection).digits(0);
const [[, y0], [, y1]] = path.bounds({ type: "FeatureCollection", features });
const height = Math.ceil(y1 - Math.min(0, y0));

// "M1,2L3,4L5,6Z" (absolute integers) -> "M1 2l2 2 2 2z" (relative line-tos, no zero steps).
function relative(d) {
  let out = "";
  let x = 0;
  let y = 0;
  let first = false;
  const pair = (a, b) => `${a}${b < 0 ? "" : " "}${b}`;
  for (const [, cmd, args] of d.matchAll(/([MLZ])([^MLZ]*)/g)) {
    if (cmd === "Z") {
      out += "z";
      continue;
    }
    const [ax, ay] = args.split(",").map(Number);
    if (cmd === "M") {
      out += `M${pair(ax, ay)}`;
      first = true;
    } else if (ax !== x || ay !== y) {
      const step = pair(ax - x, ay - y);
      out += first ? `l${step}` : `${ax - x < 0 ? "" : " "}${step}`;
      first = false;
    }
    x = ax;
    y = ay;
  }
  return out;
}

const paths = {};
for (const f of features) {
  const code = byName[f.properties.name] ?? countries.numericToAlpha2(f.id);
  if (!code) {
    console.warn(`make-map: no ISO code for ${f.id} ${f.properties.name}`);
    continue;
  }
  const d = path(f);
  if (!d) continue;
  paths[code] = (paths[code] ? paths[code] : "") + relative(d);
}

const outFile = process.argv[2] ?? ".cache/world.json";
mkdirSync(dirname(outFile), { recursive: true });
writeFileSync(outFile, JSON.stringify({ width: WIDTH, height, paths }));
console.log(`make-map: ${Object.keys(paths).length} countries, ${WIDTH}x${height} -> ${outFile}`);
