/**
 * The version-info objects of Tekton Pipelines, Results and Chains as their
 * releases ship them: each component's info ConfigMap (data.version) and the
 * Role and RoleBinding that let every authenticated user get it, made from
 * the module's own manifests (the Go module cache) with the release tag
 * written in the way each release process writes it.
 *
 * - Pipelines: config/config-info.yaml (`pipelines-info`, `version: "devel"`)
 *   and the Role/RoleBinding `tekton-pipelines-info` (200-role.yaml,
 *   201-rolebinding.yaml), namespace tekton-pipelines.
 * - Results: release/release.sh (and tekton/publish.yaml) replace a trailing
 *   `devel` in release/kustomization.yaml and config/base/config-info.yaml
 *   with the tag, then `kustomize build release`: the ConfigMap, Role and
 *   RoleBinding `tekton-results-info` in tekton-pipelines, every object
 *   labelled app.kubernetes.io/version. Done here the same way, with the
 *   harness's kubectl.
 * - Chains: release/publish.yaml rewrites `version: "devel"` (and the
 *   release labels) in the rendered config/: `chains-info` in tekton-chains,
 *   with the Role/RoleBinding `tekton-chains-info` of
 *   config/100-rolebinding.yaml.
 *
 * The version written may be any string: the tests write releases in and
 * out of the supported ranges, and garbage.
 */
import { execFile } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { repoRoot } from './binaries.js';
import { chainsConfigDir, chainsVersion } from './tekton-chains.js';
import type { Manifest } from './manifests.js';

const run = promisify(execFile);

/** The Results version pinned in hack/platform/versions.env. */
export function resultsVersion(): string {
  const text = readFileSync(join(repoRoot(), 'hack', 'platform', 'versions.env'), 'utf8');
  const m = /^RESULTS_VERSION=(\S+)$/m.exec(text);
  if (!m) throw new Error('hack/platform/versions.env has no RESULTS_VERSION');
  return m[1]!;
}

function parse(text: string, where: string): Manifest[] {
  const docs = parseAllDocuments(text);
  if (!Array.isArray(docs)) return [];
  return docs.flatMap((d, i) => {
    if (d.errors.length) throw new Error(`${where}: YAML document ${i + 1}: ${d.errors.map((e) => e.message).join('; ')}`);
    const v = d.toJS() as Manifest | null;
    return v ? [v] : [];
  });
}

/** An info ConfigMap and the Role and RoleBinding that let everyone get it: exactly one of each, or an error. */
function infoObjects(objects: Manifest[], configMap: string, role: string): Manifest[] {
  const out = objects.filter((o) => (o.kind === 'ConfigMap' && o.metadata?.name === configMap) || ((o.kind === 'Role' || o.kind === 'RoleBinding') && o.metadata?.name === role));
  if (out.length !== 3 || new Set(out.map((o) => o.kind)).size !== 3) {
    throw new Error(`expected the ConfigMap ${configMap} and the Role and RoleBinding ${role}; found ${out.map((o) => `${o.kind}/${o.metadata?.name}`).join(', ') || 'none'}`);
  }
  return out;
}

/** YAML (a JSON string when it needs quoting) for a version written into a manifest. */
function yamlScalar(version: string): string {
  return JSON.stringify(version);
}

/**
 * The rewrite of Tekton's publish tasks (Chains' release/publish.yaml, the
 * same in Results' tekton/publish.yaml): `pipeline.tekton.dev/release`,
 * `app.kubernetes.io/version` and `version` from "devel" to the tag.
 */
export function publishRewrite(yaml: string, version: string): string {
  const v = yamlScalar(version);
  return yaml
    .replace(/(pipeline\.tekton\.dev\/release): "devel"/g, `$1: ${v}`)
    .replace(/(app\.kubernetes\.io\/version): "devel"/g, `$1: ${v}`)
    .replace(/(version): "devel"/g, `$1: ${v}`);
}

/** pipelines-info and its Role/RoleBinding from Tekton's config/ (the harness's Tekton), data.version set to `version`. */
export function pipelinesInfoObjects(tektonConfigDir: string, version: string): Manifest[] {
  const all = ['config-info.yaml', '200-role.yaml', '201-rolebinding.yaml'].flatMap((f) => parse(readFileSync(join(tektonConfigDir, f), 'utf8'), f));
  return infoObjects(all, 'pipelines-info', 'tekton-pipelines-info').map((o) =>
    o.kind === 'ConfigMap' ? ({ ...o, data: { ...((o['data'] as Record<string, string> | undefined) ?? {}), version } } as Manifest) : o,
  );
}

/** chains-info and its Role/RoleBinding, as a Chains release of `version` ships them (from the module of hack/platform/versions.env). */
export async function chainsInfoObjects(version: string): Promise<Manifest[]> {
  const dir = await chainsConfigDir(chainsVersion());
  const text = ['config-info.yaml', '100-rolebinding.yaml'].map((f) => readFileSync(join(dir, f), 'utf8')).join('\n---\n');
  return infoObjects(parse(publishRewrite(text, version), `${dir}: config-info.yaml, 100-rolebinding.yaml`), 'chains-info', 'tekton-chains-info');
}

/** The Results module's directory in the Go module cache (downloaded when missing), through the harness's wrapper module. */
export async function resultsModuleDir(version: string): Promise<string> {
  const wrapper = join(repoRoot(), 'hack', 'platform', 'tekton');
  const env = { ...process.env, GOFLAGS: '-mod=mod', GOTOOLCHAIN: 'local', GONOSUMDB: process.env['GONOSUMDB'] ?? 'github.com,gocloud.dev,k8s.io,sigs.k8s.io,knative.dev' };
  const { stdout: cache } = await run('go', ['env', 'GOMODCACHE'], { cwd: wrapper, env });
  const dir = join(cache.trim(), 'github.com', 'tektoncd', `results@${version}`);
  if (existsSync(join(dir, 'release', 'kustomization.yaml'))) return dir;
  const { stdout } = await run('go', ['mod', 'download', '-json', `github.com/tektoncd/results@${version}`], { cwd: wrapper, env });
  const got = (JSON.parse(stdout) as { Dir?: string }).Dir;
  if (!got || !existsSync(join(got, 'release', 'kustomization.yaml'))) throw new Error(`the Go module github.com/tektoncd/results@${version} has no release/kustomization.yaml`);
  return got;
}

function makeWritable(dir: string): void {
  chmodSync(dir, 0o755);
  for (const n of readdirSync(dir)) {
    const p = join(dir, n);
    if (statSync(p).isDirectory()) makeWritable(p);
    else chmodSync(p, 0o644);
  }
}

/**
 * tekton-results-info, its Role and RoleBinding, as a Results release of
 * `version` ships them: release.sh's rewrite and `kubectl kustomize release`
 * on a copy of the module of hack/platform/versions.env.
 */
export async function resultsInfoObjects(version: string, kubectl: string): Promise<Manifest[]> {
  const module = await resultsModuleDir(resultsVersion());
  const work = mkdtempSync(join(tmpdir(), 'results-release-'));
  try {
    for (const d of ['config', 'release']) cpSync(join(module, d), join(work, d), { recursive: true });
    makeWritable(work);
    // release.sh: sed -i "s/devel$/${RELEASE_VERSION}/g" on these two files.
    for (const f of [join(work, 'release', 'kustomization.yaml'), join(work, 'config', 'base', 'config-info.yaml')]) {
      writeFileSync(f, readFileSync(f, 'utf8').replace(/devel$/gm, yamlScalar(version)));
    }
    const { stdout } = await run(kubectl, ['kustomize', join(work, 'release')], { maxBuffer: 16 << 20 });
    return infoObjects(parse(stdout, 'kubectl kustomize release'), 'tekton-results-info', 'tekton-results-info');
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
