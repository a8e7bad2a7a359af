/**
 * The sample typed kinds (config/samples/kinds/<name>): each a definition
 * and its Pipeline, and what `kinds render` makes of them for the remote
 * side, written under remote/ by `npm run gen:crds` and compared by a drift
 * test. `signing` is the one `internal-services local` serves.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { repoRoot } from '../util/repo.js';
import { apiResourceSchemaOf } from './kcp-export.js';
import type { RequestDefinitionSpec } from './request-definition.js';
import { renderKind, type DeclaredParam } from './typed-kind-crd.js';

/** The samples, each a directory of config/samples/kinds. */
export const SAMPLE_KINDS = ['signing', 'ticketing'] as const;
export type SampleKindName = (typeof SAMPLE_KINDS)[number];

/** A sample's directory, relative to the repository. */
export function sampleKindDir(name: SampleKindName = 'signing'): string {
  return join('config', 'samples', 'kinds', name);
}

export interface SampleKind {
  definition: { metadata: { name: string }; spec: RequestDefinitionSpec };
  pipeline: { metadata: { name: string }; spec: { params?: DeclaredParam[]; results?: Array<{ name: string }> } };
}

export function sampleKind(name: SampleKindName = 'signing'): SampleKind {
  const dir = join(repoRoot(), sampleKindDir(name));
  return {
    definition: parse(readFileSync(join(dir, 'definition.yaml'), 'utf8')) as SampleKind['definition'],
    pipeline: parse(readFileSync(join(dir, 'pipeline.yaml'), 'utf8')) as SampleKind['pipeline'],
  };
}

/** File name under the sample's remote/ → its objects. */
export function sampleKindFiles(name: SampleKindName = 'signing'): Record<string, object[]> {
  const { definition, pipeline } = sampleKind(name);
  const [crd, ...rbac] = renderKind(definition, pipeline, { rbac: true });
  return {
    'crd.yaml': [crd!],
    'rbac.yaml': rbac,
    'kcp-apiresourceschema.yaml': [apiResourceSchemaOf(crd as Parameters<typeof apiResourceSchemaOf>[0])],
  };
}
