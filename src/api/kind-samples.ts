/**
 * The sample typed kind (config/samples/kinds/signing): its definition and
 * Pipeline, and what `kinds render` makes of them for the remote side,
 * written under remote/ by `npm run gen:crds` and compared by a drift test.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { repoRoot } from '../util/repo.js';
import { apiResourceSchemaOf } from './kcp-export.js';
import type { RequestDefinitionSpec } from './request-definition.js';
import { renderKind, type DeclaredParam } from './typed-kind-crd.js';

export const SAMPLE_KIND_DIR = join('config', 'samples', 'kinds', 'signing');

export interface SampleKind {
  definition: { metadata: { name: string }; spec: RequestDefinitionSpec };
  pipeline: { metadata: { name: string }; spec: { params?: DeclaredParam[]; results?: Array<{ name: string }> } };
}

export function sampleKind(): SampleKind {
  const dir = join(repoRoot(), SAMPLE_KIND_DIR);
  return {
    definition: parse(readFileSync(join(dir, 'definition.yaml'), 'utf8')) as SampleKind['definition'],
    pipeline: parse(readFileSync(join(dir, 'pipeline.yaml'), 'utf8')) as SampleKind['pipeline'],
  };
}

/** File name under the sample's remote/ → its objects. */
export function sampleKindFiles(): Record<string, object[]> {
  const { definition, pipeline } = sampleKind();
  const [crd, ...rbac] = renderKind(definition, pipeline, { rbac: true });
  return {
    'crd.yaml': [crd!],
    'rbac.yaml': rbac,
    'kcp-apiresourceschema.yaml': [apiResourceSchemaOf(crd as Parameters<typeof apiResourceSchemaOf>[0])],
  };
}
