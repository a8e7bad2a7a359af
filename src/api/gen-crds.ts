/**
 * Writes config/crd/bases/*.yaml from the API definition. Run `npm run gen:crds`
 * after changing src/api/types.ts; a unit test fails while the files are stale.
 */
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { crdFiles } from './crd.js';
import { renderCrdYaml, repoRoot } from './crd-render.js';

const dir = join(repoRoot(), 'config', 'crd', 'bases');
mkdirSync(dir, { recursive: true });
for (const [file, obj] of Object.entries(crdFiles)) {
  writeFileSync(join(dir, file), renderCrdYaml(obj));
  console.log(`wrote config/crd/bases/${file}`);
}
