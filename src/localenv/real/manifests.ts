/**
 * Loading YAML manifests and applying them to a cluster: a small,
 * dependency-free stand-in for `kubectl apply`. It knows nothing of an
 * Environment (installing the project into one is apply.ts), so that the
 * Tekton installer (tekton.ts) can use it without an import circle.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import {
  ApiException,
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubernetesObjectApi,
  dumpYaml,
  loadYaml,
  type KubeConfig,
  type KubernetesObject,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { statusCode } from '../../kube/client.js';

/** A manifest object: at least apiVersion, kind and metadata.name. */
export type Manifest = KubernetesObject & Record<string, unknown>;

export { statusCode };

/**
 * Reads manifests from a YAML file (multi-document) or from every *.yaml /
 * *.yml file below a directory (recursively, sorted by path, skipping
 * kustomization.yaml). Empty documents are dropped and `kind: *List` objects
 * are expanded into their items.
 */
export function loadManifests(pathOrDir: string): Manifest[] {
  const files = statSync(pathOrDir).isDirectory() ? yamlFilesUnder(pathOrDir) : [pathOrDir];
  const out: Manifest[] = [];
  for (const file of files) {
    const docs = parseAllDocuments(readFileSync(file, 'utf8'));
    // parseAllDocuments returns an EmptyStream (not an array) for empty input.
    if (!Array.isArray(docs)) continue;
    docs.forEach((doc, i) => {
      if (doc.errors.length > 0) {
        throw new Error(`${file}: YAML document ${i + 1}: ${doc.errors.map((e) => e.message).join('; ')}`);
      }
      const value: unknown = doc.toJS();
      if (value === null || value === undefined) return;
      for (const obj of expandLists(value)) {
        if (typeof obj.apiVersion !== 'string' || typeof obj.kind !== 'string' || typeof obj.metadata?.name !== 'string') {
          throw new Error(`${file}: YAML document ${i + 1} is not a Kubernetes object (apiVersion, kind, metadata.name)`);
        }
        out.push(obj);
      }
    });
  }
  return out;
}

function expandLists(value: unknown): Manifest[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new Error(`expected a mapping, got ${Array.isArray(value) ? 'a sequence' : typeof value}`);
  }
  const obj = value as Manifest;
  if (typeof obj.kind === 'string' && obj.kind.endsWith('List') && Array.isArray(obj['items'])) {
    return (obj['items'] as unknown[]).flatMap(expandLists);
  }
  return [obj];
}

function yamlFilesUnder(dir: string): string[] {
  const files: string[] = [];
  const walk = (d: string): void => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, entry.name);
      if (entry.isDirectory()) walk(p);
      else if (/\.ya?ml$/.test(entry.name) && !/^kustomization\.ya?ml$/.test(entry.name)) files.push(p);
    }
  };
  walk(dir);
  return files.sort();
}

function describe(obj: KubernetesObject): string {
  const ns = obj.metadata?.namespace;
  return `${obj.kind ?? '?'} ${ns ? `${ns}/` : ''}${obj.metadata?.name ?? '?'}`;
}

/**
 * Create-or-replace, in order. An object that already exists is replaced
 * with its current resourceVersion (retrying if it changes in between), so
 * applying the same manifests twice is harmless. Returns the stored objects
 * as client-node gives them back (model objects for built-in kinds).
 */
export async function applyObjects(kc: KubeConfig, objects: readonly KubernetesObject[], opts: { servedWithinMs?: number } = {}): Promise<KubernetesObject[]> {
  let client = KubernetesObjectApi.makeApiClient(kc);
  const applied: KubernetesObject[] = [];
  for (const obj of objects) {
    // A kind whose API is not served yet (a CRD just created; on kcp, an API a
    // new workspace gets through a binding its initializer makes) is looked
    // up again, with a fresh client (client-node keeps what discovery said),
    // until it is served or `servedWithinMs` has passed.
    const deadline = Date.now() + (opts.servedWithinMs ?? 60_000);
    for (;;) {
      try {
        applied.push(await applyOne(client, obj));
        break;
      } catch (err) {
        // client-node's discovery: the group version unknown (a 404 for its
        // resource list), or known without this kind.
        if (!/Unrecognized API version and kind|Failed to fetch resource metadata for .*HTTP-Code: 404/.test(String((err as Error).cause ?? err)) || Date.now() >= deadline) throw err;
        await new Promise((r) => setTimeout(r, 500));
        client = KubernetesObjectApi.makeApiClient(kc);
      }
    }
  }
  return applied;
}

/**
 * KubernetesObjectApi serializes built-in kinds through client-node's
 * generated models, which expect the models' property names (e.g.
 * `xKubernetesPreserveUnknownFields`) rather than the wire names
 * (`x-kubernetes-preserve-unknown-fields`) a YAML manifest has; given a plain
 * manifest it silently drops such fields. So manifests are first converted
 * to the model representation with client-node's own loadYaml, and the
 * conversion is checked to be lossless (a field unknown to the model, or a
 * custom kind whose version+kind collides with a built-in model name, is an
 * error rather than a silent change).
 */
function toClientModel(obj: KubernetesObject): KubernetesObject {
  const wire = JSON.parse(JSON.stringify(obj)) as unknown;
  const model = loadYaml<KubernetesObject>(JSON.stringify(wire));
  const back = parseYaml(dumpYaml(model)) as unknown;
  const diff = firstDifference(wire, back, '');
  if (diff !== undefined) {
    throw new Error(
      `${describe(obj)}: client-node's model for ${obj.apiVersion ?? '?'} ${obj.kind ?? '?'} does not preserve ${diff}`,
    );
  }
  return model;
}

/** Path of the first place where two JSON values differ, or undefined if equal. */
function firstDifference(a: unknown, b: unknown, path: string): string | undefined {
  if (a === b) return undefined;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) {
    return path || '(root)';
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    if (a.length !== b.length) return `${path} (length)`;
    for (let i = 0; i < a.length; i++) {
      const d = firstDifference(a[i], b[i], `${path}[${i}]`);
      if (d !== undefined) return d;
    }
    return undefined;
  }
  const ra = a as Record<string, unknown>;
  const rb = b as Record<string, unknown>;
  for (const key of new Set([...Object.keys(ra), ...Object.keys(rb)])) {
    const d = firstDifference(ra[key], rb[key], `${path}.${key}`);
    if (d !== undefined) return d;
  }
  return undefined;
}

async function applyOne(client: KubernetesObjectApi, obj: KubernetesObject): Promise<KubernetesObject> {
  // Server-owned fields that a manifest copied from a live object might carry.
  const plain = structuredClone(obj);
  if (plain.metadata) {
    delete plain.metadata.resourceVersion;
    delete plain.metadata.uid;
    delete plain.metadata.creationTimestamp;
    delete plain.metadata.managedFields;
  }
  const body = toClientModel(plain);
  try {
    return await client.create(body);
  } catch (err) {
    if (statusCode(err) !== 409) throw wrap(err, `create ${describe(obj)}`);
  }
  for (let attempt = 0; ; attempt++) {
    try {
      const current = await client.read({
        apiVersion: body.apiVersion ?? '',
        kind: body.kind ?? '',
        metadata: { name: body.metadata?.name ?? '', namespace: body.metadata?.namespace },
      });
      const next = toClientModel(plain);
      next.metadata = { ...next.metadata, resourceVersion: current.metadata?.resourceVersion };
      return await client.replace(next);
    } catch (err) {
      if (statusCode(err) === 409 && attempt < 5) continue;
      throw wrap(err, `replace ${describe(obj)}`);
    }
  }
}

function wrap(err: unknown, what: string): Error {
  const code = statusCode(err);
  const detail = (err instanceof ApiException ? statusMessage(err.body) : undefined) ?? (err instanceof Error ? err.message : String(err));
  return new Error(`${what} failed${code !== undefined ? ` (HTTP ${code})` : ''}: ${detail}`, { cause: err });
}

/** The `message` of a metav1.Status error body (client-node gives it parsed or as a JSON string). */
export function statusMessage(body: unknown): string | undefined {
  let value = body;
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value) as unknown;
    } catch {
      return value === '' ? undefined : (value as string);
    }
  }
  if (typeof value === 'object' && value !== null) {
    const m = (value as { message?: unknown }).message;
    if (typeof m === 'string') return m;
  }
  return undefined;
}

/**
 * Waits until each named CRD (e.g. "pipelineruns.tekton.dev") is Established
 * and a list of its resource (storage version) succeeds — Established alone
 * can precede the moment the new endpoint actually serves.
 */
export async function waitForCrds(kc: KubeConfig, names: readonly string[], timeoutMs = 30_000): Promise<void> {
  const ext = kc.makeApiClient(ApiextensionsV1Api);
  const custom = kc.makeApiClient(CustomObjectsApi);
  const deadline = Date.now() + timeoutMs;
  for (const name of names) {
    let problem = 'not checked yet';
    for (;;) {
      try {
        const crd: V1CustomResourceDefinition = await ext.readCustomResourceDefinition({ name });
        const established = crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True');
        if (established) {
          const version =
            crd.spec.versions.find((v) => v.storage)?.name ?? crd.spec.versions.find((v) => v.served)?.name ?? '';
          await custom.listClusterCustomObject({
            group: crd.spec.group,
            version,
            plural: crd.spec.names.plural,
            limit: 1,
          });
          break;
        }
        problem = 'not Established';
      } catch (err) {
        problem = err instanceof Error ? err.message : String(err);
      }
      if (Date.now() > deadline) throw new Error(`CRD ${name} not usable after ${timeoutMs} ms: ${problem}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** Creates a namespace unless it exists. */
export async function ensureNamespace(kc: KubeConfig, name: string): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  try {
    await core.createNamespace({ body: { apiVersion: 'v1', kind: 'Namespace', metadata: { name } } });
  } catch (err) {
    if (statusCode(err) !== 409) throw wrap(err, `create Namespace ${name}`);
  }
}

/** Creates a ServiceAccount if missing (no controller-manager makes "default" here). */
export async function ensureServiceAccount(kc: KubeConfig, namespace: string, name: string): Promise<void> {
  const core = kc.makeApiClient(CoreV1Api);
  try {
    await core.createNamespacedServiceAccount({ namespace, body: { metadata: { name } } });
  } catch (err) {
    if (statusCode(err) !== 409) throw wrap(err, `create ServiceAccount ${namespace}/${name}`);
  }
}

/** Applies manifests and waits for any CRDs among them; returns what was applied. */
export async function applyManifests(kc: KubeConfig, objects: readonly Manifest[]): Promise<KubernetesObject[]> {
  const applied = await applyObjects(kc, objects);
  const crds = objects
    .filter((o) => o.kind === 'CustomResourceDefinition' && (o.apiVersion ?? '').startsWith('apiextensions.k8s.io/'))
    .map((o) => o.metadata?.name ?? '');
  if (crds.length > 0) await waitForCrds(kc, crds);
  return applied;
}
