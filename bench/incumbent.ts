/**
 * The Go controller this project replaces (konflux-ci/internal-services), as
 * the benchmark runs it for `--against-incumbent` (issue 55): its binary
 * built from its source by hack/incumbent/build.sh (or INCUMBENT_BIN), once
 * as its users run it and once with its clients' rate limits lifted
 * (INCUMBENT_VARIANT=unlimited-qps, or INCUMBENT_BIN_UNLIMITED); its CRDs
 * and ClusterRole read from the same commit of its source.
 *
 * Nothing of the Go controller is copied into this repository: its source
 * is read from the local mirror (INCUMBENT_SRC) at the commit its binary
 * was built from.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import type { KubernetesObject } from '@kubernetes/client-node';
import { applyManifests, applyObjects, loadManifests, type Environment } from '../src/localenv/index.js';
import { repoRoot } from '../src/util/repo.js';

/** The Go controller's kustomize name for its ClusterRole (config/rbac/role.yaml after its namePrefix). */
const GO_ROLE = 'internal-services-manager-role';

export interface IncumbentBuild {
  /** Its users' way: controller-runtime's client limits (internal cluster 20/s, burst 30; the remote cluster client-go's 5/s, burst 10). */
  bin: string;
  /** The same source with both clients' limits lifted (QPS -1). */
  unlimitedBin: string;
  commit: string;
  /** A directory holding its source's config/ at that commit. */
  source: string;
}

function build(variant: string | undefined, log: (m: string) => void): string {
  log(`building the Go controller${variant ? ` (${variant})` : ''} with hack/incumbent/build.sh (cached after the first time)`);
  const out = execFileSync('bash', [join(repoRoot(), 'hack', 'incumbent', 'build.sh')], {
    env: { ...process.env, ...(variant ? { INCUMBENT_VARIANT: variant } : {}) },
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  });
  return out.trim().split('\n').pop()!;
}

/** The Go controller's binaries and source: INCUMBENT_BIN / INCUMBENT_BIN_UNLIMITED when set, built otherwise. */
export function incumbentBuild(log: (m: string) => void): IncumbentBuild {
  const bin = process.env['INCUMBENT_BIN'] || build(undefined, log);
  const unlimitedBin = process.env['INCUMBENT_BIN_UNLIMITED'] || build('unlimited-qps', log);
  const commitFile = join(dirname(bin), 'COMMIT');
  const commit = existsSync(commitFile) ? readFileSync(commitFile, 'utf8').trim() : process.env['INCUMBENT_COMMIT'] ?? '';
  if (!/^[0-9a-f]{40}$/.test(commit)) throw new Error(`--against-incumbent: cannot tell which commit ${bin} was built from (no COMMIT file beside it; set INCUMBENT_COMMIT)`);
  const src = process.env['INCUMBENT_SRC'] ?? '/work/.mirror/konflux-ci+internal-services/repo';
  const source = mkdtempSync(join(tmpdir(), 'incumbent-config-'));
  try {
    execFileSync('sh', ['-c', `git -C "$1" archive --format=tar "$2" config | tar -x -C "$3"`, 'sh', src, commit, source], { stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (e) {
    throw new Error(`--against-incumbent: cannot read config/ of ${commit} from ${src} (INCUMBENT_SRC): ${(e as { stderr?: Buffer }).stderr?.toString().trim() ?? String(e)}`);
  }
  return { bin, unlimitedBin, commit, source };
}

/** The command template for the benchmark's --controller-cmd: its namespace the benchmark's (where the runs are followed), no leader election, its probes off. */
export function incumbentCommand(bin: string): string {
  const q = `'${bin.replace(/'/g, `'\\''`)}'`;
  return `exec env SERVICE_NAMESPACE={namespace} ${q} --kubeconfig={internalKubeconfig} --remote-cluster-config-file={remoteKubeconfig} --metrics-bind-address=0 --health-probe-bind-address=0 --leader-elect=false`;
}

/** Its ready line: controller-runtime's. */
export const INCUMBENT_READY_LOG = 'Starting workers';

/**
 * Its CRDs (in place of this project's, under the same names) and its
 * ClusterRole, bound to the controller's identity on both clusters. This
 * project's RBAC stays bound too (the environment installed it); its role
 * grants nothing the Go controller uses beyond its own.
 */
export async function installIncumbent(env: Environment, source: string, log: (m: string) => void): Promise<void> {
  const crds = loadManifests(join(source, 'config', 'crd', 'bases'));
  const role = loadManifests(join(source, 'config', 'rbac', 'role.yaml')).filter((o) => o.kind === 'ClusterRole');
  if (crds.length !== 2 || role.length !== 1) throw new Error(`--against-incumbent: expected 2 CRDs and a ClusterRole in ${source}/config, found ${crds.length} and ${role.length}`);
  role[0]!.metadata = { ...role[0]!.metadata, name: GO_ROLE };
  const binding: KubernetesObject = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: GO_ROLE },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: GO_ROLE },
    subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: env.internal.identities.controller.username }],
  } as KubernetesObject;
  for (const [name, side] of [['internal', env.internal], ['remote', env.remote]] as const) {
    const admin = side.identities.admin.kubeConfig();
    await applyManifests(admin, crds);
    await applyObjects(admin, [...role, { ...binding, subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: side.identities.controller.username }] } as KubernetesObject]);
    log(`the Go controller's CRDs and ClusterRole installed on the ${name} cluster`);
  }
}
