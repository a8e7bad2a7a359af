/**
 * Finding the resource --kind names on the target cluster through API
 * discovery, as kubectl does: the API groups and their preferred versions
 * (GET /apis), then the resources of each group version searched (GET
 * /apis/GROUP/VERSION). With a group, only that group is read; a bare name
 * reads every group (a group that fails to answer, e.g. an aggregated API
 * that is down, is skipped). InternalRequest needs no look-up.
 */
import type { V1APIGroup } from '@kubernetes/client-node';
import type { Cluster } from '../../kube/client.js';
import { BUILT_IN_KIND, chooseKind, namesBuiltIn, parseKindFlag, servedResources, type KindQuery, type KindRef, type ServedResource } from './kind.js';
import { CliError } from './args-output.js';
import { apiError } from './target.js';

/** At most this many discovery requests at once. */
const PARALLEL = 8;

export type Discovery = Pick<Cluster, 'apis' | 'custom'>;

/** The kind --kind names on the cluster; InternalRequest when it is not given or names that. */
export async function resolveKind(cluster: Discovery, flag: string | undefined, t: { where: string; namespace: string }): Promise<KindRef> {
  const q = parseKindFlag(flag);
  if (!q || namesBuiltIn(q)) return BUILT_IN_KIND;
  const text = flag!.trim();
  let groups: V1APIGroup[];
  try {
    groups = (await cluster.apis.getAPIVersions()).groups ?? [];
  } catch (e) {
    throw apiError(e, t, `list its API groups (to find --kind ${text})`);
  }
  const searched = groupVersions(q, groups);
  if (q.group !== undefined && searched.length === 0) {
    const known = groups.find((g) => g.name === q.group);
    throw new CliError(
      'CLI_KIND_UNKNOWN',
      known
        ? `--kind ${text}: ${t.where} serves API group ${q.group} in ${known.versions.map((v) => v.version).join(', ')}, not ${q.version ?? '?'}`
        : `--kind ${text}: ${t.where} serves no API group ${q.group}; is the kind installed there? (its CRD comes from \`internal-services kinds render\`)`,
    );
  }
  const served = await inBatches(searched, PARALLEL, async ({ group, version }): Promise<ServedResource[]> => {
    try {
      const list = await cluster.custom.getAPIResources({ group, version });
      return servedResources(group, version, list.resources ?? []);
    } catch (e) {
      if (q.group !== undefined) throw apiError(e, t, `list the resources of ${group}/${version} (to find --kind ${text})`);
      return [];
    }
  });
  return chooseKind(text, q, served.flat(), `the resources of ${t.where}`);
}

/** The group versions to search: the one asked for, else each group's preferred version (that group's only, with a group). */
export function groupVersions(q: KindQuery, groups: readonly V1APIGroup[]): Array<{ group: string; version: string }> {
  const out: Array<{ group: string; version: string }> = [];
  for (const g of groups) {
    if (q.group !== undefined && g.name !== q.group) continue;
    const versions = g.versions.map((v) => v.version);
    const version = q.version ?? g.preferredVersion?.version ?? versions[0];
    if (version !== undefined && versions.includes(version)) out.push({ group: g.name, version });
  }
  return out;
}

async function inBatches<T, R>(items: readonly T[], size: number, fn: (x: T) => Promise<R>): Promise<R[]> {
  const out: R[] = [];
  for (let i = 0; i < items.length; i += size) out.push(...(await Promise.all(items.slice(i, i + size).map(fn))));
  return out;
}
