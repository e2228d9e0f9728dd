// Builds dist/esm (ES modules) and dist/cjs (CommonJS), each with its .d.ts files.
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
rmSync(join(root, 'dist'), { recursive: true, force: true });
for (const [config, dir, type] of [
  ['tsconfig.json', 'esm', 'module'],
  ['tsconfig.cjs.json', 'cjs', 'commonjs'],
]) {
  execFileSync(process.execPath, [tsc, '-p', join(root, config)], { stdio: 'inherit', cwd: root });
  mkdirSync(join(root, 'dist', dir), { recursive: true });
  // Marks the folder's .js and .d.ts files as ES modules or CommonJS for Node and TypeScript.
  writeFileSync(join(root, 'dist', dir, 'package.json'), JSON.stringify({ type }) + '\n');
}
