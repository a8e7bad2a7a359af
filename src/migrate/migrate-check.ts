/**
 * `internal-services migrate check`, the part that decides (pure): given the
 * Go controller's configuration, this controller's (if there is one yet),
 * the requests on a remote and the Pipelines and Tasks installed on the
 * internal cluster, which requests this controller would refuse and why,
 * and the configuration it needs to serve what the Go controller served.
 *
 * Each request is judged by decide() itself (src/controller/decide.ts) as if
 * it had just arrived: the same code that will judge it after the switch,
 * so the check cannot drift from the rules. A request the Go controller is
 * running is not judged again after the switch (it is followed to its end:
 * docs/migrating.md), and is listed as such; it is still judged, to show
 * what its next incarnation would meet.
 *
 * The configuration proposed: this controller's own if it has one, else the
 * Go controller's carried over (its allowList, allowedGitResolverURLs,
 * debug and volumeClaim mean the same here, except that an empty
 * allowedGitResolverURLs allows any git URL there and none here); to it is
 * added, for each request refused here that the Go controller would have
 * served, what its refusal asks for (its namespace, its git repository, the
 * cluster resolver, its service account), and the requests are judged again
 * under it. What is still refused is not a matter of configuration (a
 * Pipeline missing here, params the Pipeline does not declare, …).
 */
import { isFinished, phaseOf } from '../api/conditions.js';
import type { InternalRequest } from '../api/types.js';
import { CONFIG_NAME, type InternalServicesConfig } from '../api/config-types.js';
import { decide, type Action } from '../controller/decide.js';
import { effectiveConfig } from '../controller/config.js';
import { requestedOf, requestedServiceAccount } from '../controller/requested-run.js';
import type { Pipeline, PipelineRun } from '../tekton/tekton-types.js';
import { incumbentRunOf, mayHaveIncumbentRun } from '../requests/incumbent.js';
import { runLocation, type RunsSeen } from './run-location.js';

/** The Go controller's InternalServicesConfig spec (api/v1alpha1/internalservicesconfig_types.go at ac3f07f). */
export interface IncumbentConfigSpec {
  allowList?: string[];
  allowedGitResolverURLs?: string[];
  debug?: boolean;
  volumeClaim?: { name?: string; size?: string };
}

export interface CheckInput {
  /** This controller's namespace on the internal cluster. */
  namespace: string;
  /** The remote the requests are on (its name in this controller's configuration). */
  remote: string;
  /**
   * On kcp: the workspace path the requests are in (the remote kubeconfig's
   * `…/clusters/root:org:team`): rules are matched against it, as the
   * controller does, and requests are shown and proposed by it.
   */
  workspace?: string | undefined;
  requests: InternalRequest[];
  /** Pipelines and Tasks installed in `namespace`. */
  pipelines: Pipeline[];
  tasks: Array<{ metadata?: { name?: string } } & Record<string, unknown>>;
  /** The Go controller's configuration; undefined: it has none (it then refuses every request). */
  incumbent: IncumbentConfigSpec | undefined;
  /** This controller's configuration, if it has one already. */
  ours: InternalServicesConfig | undefined;
  /**
   * The ServiceAccounts of `namespace`; undefined when they could not be
   * listed (a request naming one is then judged as if it exists).
   */
  serviceAccounts?: ReadonlySet<string> | undefined;
  /** The Go controller's runs, where they were looked for (run-location.ts). */
  runs?: RunsSeen;
  now: Date;
}

export type Judgement =
  | { here: 'runs'; message: string }
  | { here: 'waits'; message: string }
  | { here: 'refused'; code: string; message: string };

export interface RequestRow {
  request: string;
  /** What the Go controller made of it: its conditions[0].reason, or "new". */
  incumbent: string;
  /** In progress under the Go controller: followed to its end after the switch, not judged again. */
  followed: boolean;
  /** Where its run is (run-location.ts), for a request the Go controller reached and did not finish. */
  run?: string;
  /** Under the configuration checked against (this controller's, or the Go controller's carried over). */
  now: Judgement;
  /** Under the proposed configuration. */
  proposed: Judgement;
}

export interface CheckReport {
  /** Which configuration the requests were judged under first. */
  judgedUnder: 'ours' | 'incumbent';
  /** On kcp: the workspace path the requests were judged under. */
  workspace?: string;
  rows: RequestRow[];
  /** The InternalServicesConfig this controller needs. */
  proposal: InternalServicesConfig;
  /** What was added to reach it, one sentence each. */
  added: string[];
  counts: { requests: number; refusedNow: number; refusedProposed: number; followed: number };
}

type Spec = InternalServicesConfig['spec'];

/** The Go controller's configuration as this controller's (the fields that mean the same). */
export function carriedOver(spec: IncumbentConfigSpec | undefined): Spec {
  return {
    ...(spec?.allowList?.length ? { allowList: [...spec.allowList] } : {}),
    ...(spec?.allowedGitResolverURLs?.length ? { allowedGitResolverURLs: [...spec.allowedGitResolverURLs] } : {}),
    ...(spec?.debug ? { debug: true } : {}),
    ...(spec?.volumeClaim ? { volumeClaim: { ...spec.volumeClaim } } : {}),
  } as Spec;
}

/** Whether the Go controller would run this request's reference as far as its configuration goes (EnsureRequestIsAllowed, adapter.go). */
export function incumbentAllows(spec: IncumbentConfigSpec | undefined, req: InternalRequest): boolean {
  if (!spec || !(spec.allowList ?? []).includes(req.metadata.namespace ?? '')) return false;
  const ref = req.spec.pipeline?.pipelineRef;
  if (ref?.resolver === 'git' && spec.allowedGitResolverURLs?.length) {
    const url = ref.params?.find((p) => p.name === 'url')?.value;
    return url !== undefined && spec.allowedGitResolverURLs.includes(url);
  }
  return true;
}

function config(namespace: string, spec: Spec): InternalServicesConfig {
  return { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalServicesConfig', metadata: { name: CONFIG_NAME, namespace }, spec };
}

/** A judge of requests under one configuration: decide() on each as if it had just arrived. */
export function judgeUnder(input: Pick<CheckInput, 'namespace' | 'remote' | 'workspace' | 'pipelines' | 'tasks' | 'now' | 'serviceAccounts'>, cfg: InternalServicesConfig): (req: InternalRequest) => Judgement {
  const config = effectiveConfig(cfg, input.namespace, { defaultRemote: input.remote });
  const tasks = new Map(input.tasks.flatMap((t) => (t.metadata?.name ? [[t.metadata.name, t] as const] : [])));
  return (req) => {
    const fresh: InternalRequest = { ...req, metadata: { ...req.metadata, finalizers: [] }, status: {} };
    delete fresh.metadata.deletionTimestamp;
    const what = requestedOf(fresh.spec);
    const pipeline = what.kind === 'installed' ? input.pipelines.find((p) => p.metadata?.name === what.pipeline) : undefined;
    const sa = requestedServiceAccount(fresh);
    const serviceAccount = sa ? { name: sa, answer: !input.serviceAccounts ? ('unknown' as const) : input.serviceAccounts.has(sa) ? ('present' as const) : ('missing' as const) } : undefined;
    return verdictOf(decide({ namespace: input.namespace, remote: input.remote, ...(input.workspace ? { workspace: input.workspace } : {}), request: fresh, pipelineRuns: [], config, pipeline, tasks, now: input.now, ...(serviceAccount ? { serviceAccount } : {}) }));
  };
}

function verdictOf(actions: readonly Action[]): Judgement {
  const status = actions.find((a): a is Extract<Action, { type: 'writeStatus' }> => a.type === 'writeStatus');
  const c = status?.status.conditions?.[0];
  if (c && c.status === 'False') return { here: 'refused', code: status?.code ?? c.reason, message: c.message ?? '' };
  if (actions.some((a) => a.type === 'createPipelineRun')) return { here: 'runs', message: 'runs' };
  if (actions.some((a) => a.type === 'startResolution' || a.type === 'checkCommit' || a.type === 'lookUpRef')) {
    return { here: 'runs', message: 'its reference passes; what it resolves to is checked when it runs' };
  }
  if (c && c.status === 'Unknown') {
    const phase = status ? phaseOf({ status: status.status } as InternalRequest) : undefined;
    return { here: 'waits', message: `${phase ?? c.reason}: ${status?.status.conditions?.find((x) => x.type !== 'Succeeded')?.message ?? c.message ?? ''}`.trim() };
  }
  return { here: 'waits', message: actions.map((a) => a.type).join(', ') || 'nothing to do' };
}

/** What a refused request's configuration needs, where the Go controller served it. */
function needs(req: InternalRequest, spec: Spec, added: Set<string>, workspace: string | undefined): void {
  const s = spec as Record<string, unknown>;
  const add = (field: 'allowList' | 'allowedGitResolverURLs' | 'allowedServiceAccounts', value: string, why: string) => {
    const list = (s[field] as string[] | undefined) ?? [];
    if (list.includes(value)) return;
    s[field] = [...list, value];
    added.add(`${field}: ${JSON.stringify(value)} (${why})`);
  };
  const who = `${workspace ? `${workspace}/` : ''}${req.metadata.namespace}/${req.metadata.name}`;
  add('allowList', `${workspace ? `${workspace}/` : ''}${req.metadata.namespace ?? ''}`, `for ${who}`);
  const ref = req.spec.pipeline?.pipelineRef;
  if (ref?.resolver === 'git') {
    const url = ref.params?.find((p) => p.name === 'url')?.value;
    if (url) add('allowedGitResolverURLs', url, `the repository of ${who}`);
  }
  if (ref?.resolver === 'cluster') {
    const sources = { ...((s['sources'] as Record<string, unknown> | undefined) ?? {}) };
    if (sources['cluster'] !== true) {
      s['sources'] = { ...sources, cluster: true };
      added.add(`sources.cluster: true (the cluster resolver of ${who}; it reads only this controller's namespace)`);
    }
  }
  const sa = req.spec.serviceAccount;
  if (sa) add('allowedServiceAccounts', sa, `named by ${who}`);
}

export function migrateCheck(input: CheckInput): CheckReport {
  const judgedUnder = input.ours ? 'ours' : 'incumbent';
  const base = input.ours ? structuredClone(input.ours.spec ?? {}) : carriedOver(input.incumbent);
  const first = judgeUnder(input, config(input.namespace, structuredClone(base)));
  // A request in the Go controller's window between its create and its
  // status write has no status but a run of the Go's: it is running, and
  // followed after the switch, not new.
  const goRun = (req: InternalRequest) => (input.runs && mayHaveIncumbentRun(req) ? incumbentRunOf(req, input.runs.runs as PipelineRun[]).run : undefined);
  const rows: RequestRow[] = input.requests.map((req) => ({
    request: `${input.workspace ? `${input.workspace}/` : ''}${req.metadata.namespace}/${req.metadata.name}`,
    incumbent: req.status?.conditions?.[0]?.reason || (goRun(req) ? 'Running (no status written yet)' : 'new'),
    followed: !isFinished(req) && (req.status?.conditions?.[0]?.reason === 'Running' || goRun(req) !== undefined),
    ...((l) => (l ? { run: l } : {}))(input.runs ? runLocation(req, input.runs) : undefined),
    now: first(req),
    proposed: { here: 'runs', message: '' },
  }));
  // Add what refusals ask for, for requests the Go controller served, until nothing more is added (a namespace let in may meet the next rule).
  const spec = structuredClone(base);
  const added = new Set<string>();
  let judge = first;
  let settled = false;
  for (let round = 0; round < 4 && !settled; round++) {
    const before = added.size;
    input.requests.forEach((req, i) => {
      const j = judge(req);
      rows[i]!.proposed = j;
      if (j.here === 'refused' && incumbentAllows(input.incumbent, req)) needs(req, spec, added, input.workspace);
    });
    settled = added.size === before;
    if (!settled) judge = judgeUnder(input, config(input.namespace, structuredClone(spec)));
  }
  // Still growing after four rounds: the rows are judged once more, under what was reached.
  if (!settled) input.requests.forEach((req, i) => (rows[i]!.proposed = judge(req)));
  const proposal = config(input.namespace, spec);
  return {
    judgedUnder,
    ...(input.workspace ? { workspace: input.workspace } : {}),
    rows,
    proposal,
    added: [...added],
    counts: {
      requests: rows.length,
      refusedNow: rows.filter((r) => r.now.here === 'refused').length,
      refusedProposed: rows.filter((r) => r.proposed.here === 'refused').length,
      followed: rows.filter((r) => r.followed).length,
    },
  };
}
