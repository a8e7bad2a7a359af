/**
 * Writes config/crd/bases/*.yaml and the generated part of config/kcp/provider
 * (APIResourceSchema, APIExport) from the API definition, and the sample
 * typed kinds' remote side (config/samples/kinds/NAME/remote). Run `npm run gen:crds`
 * after changing src/api/types.ts; unit tests fail while the files are stale.
 */
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { crdFiles } from './crd.js';
import { renderCrdYaml, repoRoot } from './crd-render.js';
import { kcpProviderFiles } from './kcp-export.js';
import { renderYamlDocs } from './crd-render.js';
import { SAMPLE_KINDS, sampleKindDir, sampleKindFiles } from './kind-samples.js';

const outputs: Array<[string, Record<string, object>]> = [
  [join('config', 'crd', 'bases'), crdFiles],
  [join('config', 'kcp', 'provider'), kcpProviderFiles],
];
for (const [sub, files] of outputs) {
  const dir = join(repoRoot(), sub);
  mkdirSync(dir, { recursive: true });
  for (const [file, obj] of Object.entries(files)) {
    writeFileSync(join(dir, file), renderCrdYaml(obj));
    console.log(`wrote ${sub}/${file}`);
  }
}

// The sample typed kinds' remote side (what `kinds render --rbac` prints).
for (const name of SAMPLE_KINDS) {
  const kindDir = join(repoRoot(), sampleKindDir(name), 'remote');
  mkdirSync(kindDir, { recursive: true });
  for (const [file, objs] of Object.entries(sampleKindFiles(name))) {
    writeFileSync(join(kindDir, file), renderYamlDocs(objs, 'internal-services kinds render (npm run gen:crds)'));
    console.log(`wrote ${sampleKindDir(name)}/remote/${file}`);
  }
}
