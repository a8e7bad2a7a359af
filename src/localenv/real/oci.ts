/**
 * Pushing Tekton bundles to an OCI registry through the distribution (v2)
 * HTTP API, with nothing but fetch: what `tkn bundle push` does, for tests.
 *
 * A Tekton bundle (as github.com/tektoncd/pipeline v1.6.6 reads it,
 * pkg/resolution/resolver/bundle) is an OCI image manifest with at most 20
 * layers, one per resource, each annotated with
 *   dev.tekton.image.apiVersion  the resource's API version ("v1"),
 *   dev.tekton.image.kind        its kind, lower case and singular ("pipeline"),
 *   dev.tekton.image.name        its metadata.name;
 * the resolver picks the layer by kind and name and reads the first file of
 * the layer's tar (uncompressed or gzip; go-containerregistry sniffs which).
 * Layers here are uncompressed tars (application/vnd.oci.image.layer.v1.tar)
 * holding one YAML file, written with fixed metadata so the same resources
 * always give the same digest.
 */
import { createHash } from 'node:crypto';
import { stringify } from 'yaml';

export const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
export const OCI_CONFIG = 'application/vnd.oci.image.config.v1+json';
export const OCI_LAYER_TAR = 'application/vnd.oci.image.layer.v1.tar';
export const ANNOTATION_API_VERSION = 'dev.tekton.image.apiVersion';
export const ANNOTATION_KIND = 'dev.tekton.image.kind';
export const ANNOTATION_NAME = 'dev.tekton.image.name';
/** Tekton's bundles resolver refuses bundles with more layers. */
export const MAX_BUNDLE_OBJECTS = 20;

/** A resource to put in a bundle: a Tekton object (apiVersion tekton.dev/v1, kind, metadata.name, spec). */
export interface BundleResource {
  apiVersion: string;
  kind: string;
  metadata: { name: string; [k: string]: unknown };
  [k: string]: unknown;
}

export interface PushedBundle {
  /** The manifest's digest, sha256:<hex>: what a digest reference names and the bundles resolver reports. */
  digest: string;
  /** HOST/REPOSITORY */
  repository: string;
  /** HOST/REPOSITORY:TAG */
  tagRef: string;
  /** HOST/REPOSITORY@sha256:<hex> */
  digestRef: string;
}

const sha256 = (b: Buffer): string => `sha256:${createHash('sha256').update(b).digest('hex')}`;
const REPOSITORY = /^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(\/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*$/;
const TAG = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const DIGEST = /^sha256:[0-9a-f]{64}$/;

/**
 * A ustar archive holding one regular file (mode 0644, owner 0, mtime 0).
 * The name is cut to 100 bytes (the header's name field; no prefix field is used).
 */
export function tarOneFile(name: string, content: Buffer): Buffer {
  const header = Buffer.alloc(512);
  const field = (offset: number, length: number, value: string): void => {
    header.write(value, offset, length, 'ascii');
  };
  const octal = (offset: number, length: number, n: number): void => field(offset, length, n.toString(8).padStart(length - 1, '0') + '\0');
  const nameBytes = Buffer.from(name, 'utf8').subarray(0, 100);
  nameBytes.copy(header, 0);
  octal(100, 8, 0o644); // mode
  octal(108, 8, 0); // uid
  octal(116, 8, 0); // gid
  octal(124, 12, content.length); // size
  octal(136, 12, 0); // mtime
  field(148, 8, '        '); // checksum: spaces while it is computed
  field(156, 1, '0'); // regular file
  field(257, 6, 'ustar\0');
  field(263, 2, '00');
  let sum = 0;
  for (const b of header) sum += b;
  field(148, 8, sum.toString(8).padStart(6, '0') + '\0 ');
  const pad = (512 - (content.length % 512)) % 512;
  // Two zero blocks end the archive.
  return Buffer.concat([header, content, Buffer.alloc(pad), Buffer.alloc(1024)]);
}

/** The layer of one resource: its tar and its annotations. */
export function bundleLayer(r: BundleResource): { tar: Buffer; annotations: Record<string, string> } {
  const name = r.metadata?.name;
  if (typeof name !== 'string' || name === '') throw new Error('a bundle resource needs metadata.name');
  if (typeof r.kind !== 'string' || r.kind === '') throw new Error(`bundle resource ${name} has no kind`);
  const version = r.apiVersion.split('/').pop() ?? '';
  const kind = r.kind.toLowerCase();
  return {
    tar: tarOneFile(name, Buffer.from(stringify(r), 'utf8')),
    annotations: { [ANNOTATION_API_VERSION]: version, [ANNOTATION_KIND]: kind, [ANNOTATION_NAME]: name },
  };
}

async function expect(res: Response, ok: number[], what: string): Promise<Response> {
  if (ok.includes(res.status)) return res;
  const body = (await res.text().catch(() => '')).slice(0, 500);
  throw new Error(`${what}: HTTP ${res.status} ${body}`);
}

/** Uploads a blob unless the repository has it already (POST, then PUT with the digest); returns its descriptor fields. */
export async function pushBlob(base: string, repository: string, data: Buffer): Promise<{ digest: string; size: number }> {
  const digest = sha256(data);
  const head = await fetch(`${base}/v2/${repository}/blobs/${digest}`, { method: 'HEAD' });
  if (head.status === 200) return { digest, size: data.length };
  const started = await expect(await fetch(`${base}/v2/${repository}/blobs/uploads/`, { method: 'POST' }), [202], `starting an upload to ${repository}`);
  await started.arrayBuffer();
  const location = started.headers.get('location');
  if (!location) throw new Error(`starting an upload to ${repository}: no Location header`);
  const url = new URL(location, base);
  url.searchParams.set('digest', digest);
  const put = await fetch(url, { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body: data });
  await (await expect(put, [201], `uploading blob ${digest} to ${repository}`)).arrayBuffer();
  return { digest, size: data.length };
}

function checkNames(repository: string, tag?: string): void {
  if (!REPOSITORY.test(repository)) throw new Error(`bad repository name ${JSON.stringify(repository)} (lower-case path components)`);
  if (tag !== undefined && !TAG.test(tag)) throw new Error(`bad tag ${JSON.stringify(tag)}`);
}

/** PUTs a manifest under a tag or digest; returns the digest the registry reports (checked against ours). */
async function putManifest(base: string, repository: string, reference: string, body: Buffer): Promise<string> {
  const digest = sha256(body);
  const res = await expect(
    await fetch(`${base}/v2/${repository}/manifests/${reference}`, { method: 'PUT', headers: { 'content-type': OCI_MANIFEST }, body }),
    [201],
    `putting the manifest ${repository}:${reference}`,
  );
  await res.arrayBuffer();
  const reported = res.headers.get('docker-content-digest');
  if (reported && reported !== digest) throw new Error(`the registry stored ${repository}:${reference} as ${reported}, not ${digest}`);
  return digest;
}

/**
 * Pushes a Tekton bundle of `resources` to `repository` under `tag` at the
 * registry `base` (http://HOST:PORT). Pushing to a tag that exists moves it.
 */
export async function pushBundle(base: string, repository: string, tag: string, resources: readonly BundleResource[]): Promise<PushedBundle> {
  checkNames(repository, tag);
  if (resources.length === 0 || resources.length > MAX_BUNDLE_OBJECTS) throw new Error(`a bundle holds 1 to ${MAX_BUNDLE_OBJECTS} resources, not ${resources.length}`);
  const layers = resources.map(bundleLayer);
  const seen = new Set<string>();
  for (const l of layers) {
    const key = `${l.annotations[ANNOTATION_KIND]}/${l.annotations[ANNOTATION_NAME]}`;
    if (seen.has(key)) throw new Error(`two resources ${key} in one bundle`);
    seen.add(key);
  }
  const pushed = [];
  for (const l of layers) pushed.push({ ...(await pushBlob(base, repository, l.tar)), annotations: l.annotations });
  // Uncompressed layers: each diff_id is the layer's digest.
  const config = Buffer.from(JSON.stringify({ architecture: '', os: '', config: {}, rootfs: { type: 'layers', diff_ids: pushed.map((p) => p.digest) } }));
  const cfg = await pushBlob(base, repository, config);
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: OCI_MANIFEST,
      config: { mediaType: OCI_CONFIG, digest: cfg.digest, size: cfg.size },
      layers: pushed.map((p) => ({ mediaType: OCI_LAYER_TAR, digest: p.digest, size: p.size, annotations: p.annotations })),
    }),
  );
  const digest = await putManifest(base, repository, tag, manifest);
  const host = new URL(base).host;
  return { digest, repository: `${host}/${repository}`, tagRef: `${host}/${repository}:${tag}`, digestRef: `${host}/${repository}@${digest}` };
}

/** Points `tag` at the manifest `digest` that `repository` already holds (re-pointing a tag without a new push). */
export async function tagManifest(base: string, repository: string, tag: string, digest: string): Promise<void> {
  checkNames(repository, tag);
  if (!DIGEST.test(digest)) throw new Error(`bad digest ${JSON.stringify(digest)}`);
  const res = await expect(await fetch(`${base}/v2/${repository}/manifests/${digest}`, { headers: { accept: OCI_MANIFEST } }), [200], `reading ${repository}@${digest}`);
  const body = Buffer.from(await res.arrayBuffer());
  if (sha256(body) !== digest) throw new Error(`the registry returned a manifest for ${repository}@${digest} with another digest`);
  await putManifest(base, repository, tag, body);
}

/** The digest `tag` points at now (HEAD of the manifest), or undefined when there is no such tag. */
export async function digestOfTag(base: string, repository: string, tag: string): Promise<string | undefined> {
  checkNames(repository, tag);
  const res = await fetch(`${base}/v2/${repository}/manifests/${tag}`, { method: 'HEAD', headers: { accept: OCI_MANIFEST } });
  if (res.status === 404) return undefined;
  await expect(res, [200], `reading ${repository}:${tag}`);
  return res.headers.get('docker-content-digest') ?? undefined;
}
