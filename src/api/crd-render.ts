import { stringify } from 'yaml';

export function renderCrdYaml(obj: object): string {
  return `# Generated from src/api/types.ts by \`npm run gen:crds\`; do not edit.\n---\n${stringify(obj, { lineWidth: 0 })}`;
}

export { repoRoot } from '../util/repo.js';
