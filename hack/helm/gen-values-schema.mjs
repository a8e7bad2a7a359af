#!/usr/bin/env node
// Writes the schema of `config.spec` in charts/internal-services/values.schema.json
// from the InternalServicesConfig CRD (config/crd/bases), so that the values
// the chart renders into the InternalServicesConfig are checked with the same
// types, enums, patterns and bounds as the API server checks them, and a
// misspelt field is refused instead of silently dropped.
//
// The CRD's schema is taken as is, less what JSON Schema has no use for
// (x-kubernetes-* extensions: CEL rules stay the API server's), plus
// "additionalProperties": false on every object that lists its properties
// (the API server would prune an unknown field without a word).
//
//   node hack/helm/gen-values-schema.mjs           rewrite the schema
//   node hack/helm/gen-values-schema.mjs --check   exit 1 if it is out of date
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const crdPath = join(root, 'config', 'crd', 'bases', 'appstudio.redhat.com_internalservicesconfigs.yaml');
const schemaPath = join(root, 'charts', 'internal-services', 'values.schema.json');

function toJsonSchema(node) {
  if (Array.isArray(node)) return node.map(toJsonSchema);
  if (node === null || typeof node !== 'object') return node;
  const out = {};
  for (const [k, v] of Object.entries(node)) {
    if (k.startsWith('x-kubernetes-')) continue;
    // Under "properties" the keys are field names, not keywords.
    out[k] = k === 'properties' ? Object.fromEntries(Object.entries(v).map(([name, s]) => [name, toJsonSchema(s)])) : toJsonSchema(v);
  }
  if (out.type === 'object' && out.properties && out.additionalProperties === undefined) out.additionalProperties = false;
  return out;
}

const crd = parse(readFileSync(crdPath, 'utf8'));
const version = crd.spec.versions.find((v) => v.storage) ?? crd.spec.versions[0];
const spec = toJsonSchema(version.schema.openAPIV3Schema.properties.spec);
spec.description = 'The spec of the InternalServicesConfig named config (generated from the CRD by hack/helm/gen-values-schema.mjs).';

const current = readFileSync(schemaPath, 'utf8');
const schema = JSON.parse(current);
schema.properties.config.properties.spec = spec;
const next = JSON.stringify(schema, null, 2) + '\n';

if (process.argv.includes('--check')) {
  if (next !== current) {
    console.error(`${schemaPath} is out of date with ${crdPath}: run node hack/helm/gen-values-schema.mjs`);
    process.exit(1);
  }
  console.log('values.schema.json is up to date with the InternalServicesConfig CRD');
} else {
  writeFileSync(schemaPath, next);
  console.log(`wrote ${schemaPath}`);
}
