/**
 * The chaos run's history (--history N): N requests that finished long ago,
 * created on the remote cluster before the controllers start (as the scale
 * mode does, scale.ts), so that every start and restart of a replica lists
 * them while requests flow; and the check that the controller left them
 * alone: no write to any of them and no PipelineRun create for any of them
 * (the audit logs), each still there with the resourceVersion it had once
 * finished (the cluster).
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { INTERNAL_REQUEST, type InternalRequest } from '../src/api/types.js';
import { fromKubeConfig } from '../src/kube/client.js';
import { categoryOf, type AuditEvent } from './audit.js';
import type { HistoryResult } from './chaos-types.js';
import { precreateFinished, type Precreated } from './scale.js';
import { round } from './stats.js';

/** Names start with "h-old-": the chaos pass's requests are "p<pass>-…". */
export function createHistory(remoteAdmin: KubeConfig, allowed: string[], n: number, log: (m: string) => void): Promise<Precreated> {
  return precreateFinished({ remoteAdmin, allowed }, n, 'h', (m) => log(m.replace(/^scale: /, 'history: ')));
}

/** What the controller did to the history; each finding also goes to `problems`. */
export async function checkHistory(
  pre: Precreated,
  o: { remoteAdmin: KubeConfig; remoteEvents: AuditEvent[]; internalEvents: AuditEvent[]; mine: (e: AuditEvent) => boolean; problems: string[] },
): Promise<HistoryResult> {
  const { remoteEvents, internalEvents, mine, problems } = o;
  const isHistory = (e: AuditEvent) => {
    const f = pre.finished.get(e.objectRef?.name ?? '');
    return f !== undefined && f.namespace === e.objectRef?.namespace;
  };
  const writes = remoteEvents.filter((e) => mine(e) && categoryOf(e.verb) === 'write' && e.objectRef?.resource === 'internalrequests' && isHistory(e));
  const prNames = new Set([...pre.finished.values()].map((f) => `ir-${f.uid}`));
  const prCreates = internalEvents.filter((e) => mine(e) && e.verb === 'create' && e.objectRef?.resource === 'pipelineruns' && prNames.has(e.objectRef?.name ?? ''));
  // The cluster's word: each one still there, unchanged since it finished.
  const client = (await fromKubeConfig('remote', o.remoteAdmin)).resource<InternalRequest>(INTERNAL_REQUEST);
  const seen = new Set<string>();
  let changed = 0;
  const changedSample: string[] = [];
  await client.list(undefined, {
    each: (r) => {
      const f = pre.finished.get(r.metadata.name ?? '');
      if (!f || f.namespace !== r.metadata.namespace) return;
      seen.add(r.metadata.name!);
      if (r.metadata.uid !== f.uid || r.metadata.resourceVersion !== f.resourceVersion) {
        changed++;
        if (changedSample.length < 5) changedSample.push(`${f.namespace}/${r.metadata.name} (resourceVersion ${f.resourceVersion} → ${r.metadata.resourceVersion})`);
      }
    },
  });
  const missing = [...pre.finished.keys()].filter((n) => !seen.has(n));
  changed += missing.length;
  if (writes.length) {
    const sample = writes.slice(0, 5).map((e) => `${e.verb} ${e.objectRef?.namespace}/${e.objectRef?.name}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''} (${e.responseStatus?.code})`);
    problems.push(`history: the controller wrote ${writes.length} times to requests that were already finished: ${sample.join(', ')}`);
  }
  if (prCreates.length) problems.push(`history: ${prCreates.length} PipelineRun creates for requests that were already finished: ${prCreates.slice(0, 5).map((e) => e.objectRef?.name).join(', ')}`);
  if (changed) problems.push(`history: ${changed} finished requests changed or missing at the end: ${[...changedSample, ...missing.slice(0, 5)].join(', ')}`);
  return {
    requests: pre.count,
    createSeconds: round(pre.seconds, 1),
    controllerWrites: writes.length,
    pipelineRunCreates: prCreates.length,
    changed,
    ok: writes.length === 0 && prCreates.length === 0 && changed === 0,
  };
}
