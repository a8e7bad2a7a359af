import { fileURLToPath } from 'node:url';
import { dirname, resolve } from 'node:path';
import { existsSync } from 'node:fs';
import { stringify } from 'yaml';

export function renderCrdYaml(obj: object): string {
  return `# Generated from src/api/types.ts by \`npm run gen:crds\`; do not edit.\n---\n${stringify(obj, { lineWidth: 0 })}`;
}

/** The checkout's root: the nearest ancestor of this file holding package.json. */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(resolve(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('cannot find the project root (package.json) above ' + fileURLToPath(import.meta.url));
    dir = parent;
  }
  return dir;
}
