/**
 * The internal cluster's Tekton Pipelines version, and what is known against
 * it (src/tekton/advisories.ts).
 *
 * Tekton ships its version in the ConfigMap `pipelines-info` of its own
 * namespace (`tekton-pipelines` in the release manifests, config/config-info.yaml;
 * the release stamps data.version, a build from source says "devel"), and its
 * Role/RoleBinding `tekton-pipelines-info` let every authenticated user get
 * that one ConfigMap. It is read with a plain get (no list/watch: that Role
 * grants neither) at start and again every refresh period, so an upgrade of
 * Tekton is seen without a restart.
 *
 * A version with an advisory, or one that cannot be told, is reported, never
 * fatal: a log line and a Warning Event when it changes, an advisory /readyz
 * check (tekton-version; it does not make the controller unready), and two
 * gauges (internal_services_tekton_info, internal_services_tekton_advisories).
 * With --refuse-resolvers-on-advisory, resolverRefusal() gives the rejection
 * message of a request that uses a resolver (the decision code asks it).
 *
 * A re-read that fails for a passing reason (network, 5xx, 403) keeps the
 * version last read and says so; a ConfigMap that is gone (404), or a first
 * read that fails, makes the version unknown.
 *
 * With `components`, the same reads (at start and every refresh period)
 * follow Tekton Results and Tekton Chains too (src/tekton/components.ts: their
 * info ConfigMaps, their supported ranges): each has its advisory /readyz
 * check (tekton-results-version, tekton-chains-version), a Warning Event
 * when its verdict changes to one outside the range, and a log line. One
 * that is not installed (no ConfigMap) is said so, and is no fault. The
 * gauge internal_services_tekton_component_status{component,reason} has all
 * three, Pipelines included (reasons ok, advisory, unknown).
 */
import { PeriodicRead } from './periodic-read.js';
import type { Logger } from 'pino';
import { describeError, statusCode, type Cluster, type KubeObject } from '../kube/client.js';
import type { ReadinessCheck } from '../kube/informer.js';
import { ADVISORIES, advisoriesFor, describeAdvisory, parseTektonVersion, UNKNOWN_VERSION, upgradeAdvice, type Advisory } from '../tekton/advisories.js';
import { componentAfterRead, componentEventReason, componentMessage, componentPending, componentReadiness, componentReportKey, componentSource, reasonGauge } from '../tekton/components.js';
import type { ComponentState, RangedComponent, VersionReason } from '../tekton/components.js';

export const PIPELINES_INFO = 'pipelines-info';
export const DEFAULT_TEKTON_NAMESPACE = 'tekton-pipelines';
/** The flag that makes requests with resolver references refused on such a version. */
export const REFUSE_FLAG = '--refuse-resolvers-on-advisory';
/** The readiness check's name. */
export const READINESS_NAME = 'tekton-version';
/** Where the supported versions are explained. */
const DOCS = 'docs/deploying.md, "Supported Tekton versions"';

export interface TektonVersionState {
  /** data.version as read (trimmed), or undefined: not read (yet), no ConfigMap, no data.version. */
  readonly version: string | undefined;
  /** advisoriesFor(version); [UNKNOWN_VERSION] when there is no version or it is not a release version. */
  readonly advisories: readonly Advisory[];
  /** namespace/name of the ConfigMap. */
  readonly source: string;
  /** Why the version is unknown, or why the last re-read failed (the version last read is kept then). */
  readonly problem?: string;
  /** false until the first read has ended (answered or failed). */
  readonly settled: boolean;
}

/** What resolverRefusal() needs of the controller's flags. */
export interface ResolverRefusalOptions {
  /** --refuse-resolvers-on-advisory. */
  readonly refuseResolversOnAdvisory: boolean;
}

export interface ConfigMapLike {
  metadata?: KubeObject['metadata'];
  data?: Record<string, string> | undefined;
}

/** The outcome of one read of the ConfigMap: it (undefined: 404), or an error. */
export type ReadOutcome = { configMap: ConfigMapLike | undefined } | { error: string; code?: number | undefined };

/** Before the first read. */
export function pendingState(source: string): TektonVersionState {
  return { version: undefined, advisories: [UNKNOWN_VERSION], source, problem: 'not read yet', settled: false };
}

/** The state a ConfigMap (or its absence) says. */
export function stateFromConfigMap(source: string, cm: ConfigMapLike | undefined): TektonVersionState {
  if (!cm) return { version: undefined, advisories: [UNKNOWN_VERSION], source, problem: `there is no ConfigMap ${source}`, settled: true };
  const raw = cm.data?.['version'];
  if (typeof raw !== 'string' || raw.trim() === '') return { version: undefined, advisories: [UNKNOWN_VERSION], source, problem: `ConfigMap ${source} has no data.version`, settled: true };
  const version = raw.trim();
  const advisories = advisoriesFor(version);
  return {
    version,
    advisories,
    source,
    ...(parseTektonVersion(version) ? {} : { problem: `ConfigMap ${source} says version ${JSON.stringify(version.slice(0, 64))}, which is not a release version like v1.6.6 ("devel" is what a build from source says)` }),
    settled: true,
  };
}

/** The state after a read: a failed re-read keeps a version already read (unless the ConfigMap is gone). */
export function stateAfterRead(prev: TektonVersionState | undefined, source: string, read: ReadOutcome): TektonVersionState {
  if ('configMap' in read) return stateFromConfigMap(source, read.configMap);
  const why = `ConfigMap ${source} cannot be read: ${read.error}`;
  if (prev?.settled && prev.version !== undefined && read.code !== 404) return { ...prev, problem: `${why}; the version read before is kept` };
  return { version: undefined, advisories: [UNKNOWN_VERSION], source, problem: why, settled: true };
}

/** Whether the version is a release with no known advisory. */
export function clean(state: TektonVersionState): boolean {
  return state.advisories.length === 0;
}

function unknown(state: TektonVersionState): boolean {
  return state.advisories.some((a) => a.kind === 'unknown-version');
}

/** "v1.6.1", or "unknown" (with why). */
function versionText(state: TektonVersionState): string {
  return state.version === undefined ? 'unknown' : JSON.stringify(state.version.slice(0, 64)).slice(1, -1);
}

/**
 * One line for the log, the Event and /readyz: the version, the advisories
 * against it by id, CVE and summary, and what to do.
 */
export function advisoryMessage(state: TektonVersionState): string {
  if (clean(state)) return `Tekton Pipelines ${versionText(state)} (ConfigMap ${state.source}): no known advisory${state.problem ? `; ${state.problem}` : ''}`;
  if (unknown(state)) {
    return (
      `The Tekton Pipelines version of the internal cluster is unknown: ${state.problem ?? 'not a release version'}. ` +
      `None of the advisories of its resolvers (${ADVISORIES.map((a) => `${a.id}/${a.cve}`).join(', ')}) can be ruled out. ` +
      `Let the controller get ConfigMap ${state.source} (--tekton-namespace names Tekton's namespace; Tekton's Role tekton-pipelines-info lets every authenticated user get it) and ${upgradeAdvice(state.version ?? '') ?? 'run a release'}; see ${DOCS}`
    );
  }
  const advice = upgradeAdvice(state.version ?? '');
  return (
    `Tekton Pipelines ${versionText(state)} (ConfigMap ${state.source}) has known advisories in the resolvers this controller relies on: ` +
    `${state.advisories.map(describeAdvisory).join('; ')}. ${advice ? `${advice[0]!.toUpperCase()}${advice.slice(1)}` : 'Upgrade Tekton Pipelines'}; see ${DOCS}${state.problem ? ` (${state.problem})` : ''}`
  );
}

/** The /readyz line: advisory (never makes the controller unready). */
export function versionReadiness(state: TektonVersionState): ReadinessCheck {
  return { name: READINESS_NAME, ok: clean(state), required: false, detail: advisoryMessage(state) };
}

/**
 * The rejection message of a request that uses a resolver, or undefined when
 * it may go on: with --refuse-resolvers-on-advisory, on a version with a
 * known advisory, and on a version that cannot be told (not read yet
 * included: nothing is ruled out). The message names the version and the
 * advisories, and what the internal cluster's administrators should do.
 */
export function resolverRefusal(state: TektonVersionState, options: ResolverRefusalOptions): string | undefined {
  if (!options.refuseResolversOnAdvisory || clean(state)) return undefined;
  const admins = "The internal cluster's administrators";
  if (unknown(state)) {
    return (
      `resolver references are refused: the Tekton Pipelines version of the internal cluster is unknown (${state.problem ?? 'not a release version'}), ` +
      `so its resolvers' advisories (${ADVISORIES.map((a) => a.id).join(', ')}) cannot be ruled out, and the controller runs with ${REFUSE_FLAG}. ` +
      `${admins} should make ConfigMap ${state.source} readable with Tekton's release version, ${upgradeAdvice(state.version ?? '') ?? 'run a release with every fix'}, or turn ${REFUSE_FLAG} off`
    );
  }
  return (
    `resolver references are refused: Tekton Pipelines ${versionText(state)} on the internal cluster has known advisories in its resolvers ` +
    `(${state.advisories.map((a) => `${a.id}/${a.cve}`).join(', ')}), and the controller runs with ${REFUSE_FLAG}. ` +
    `${admins} should ${upgradeAdvice(state.version ?? '') ?? 'upgrade Tekton Pipelines'}, or turn ${REFUSE_FLAG} off`
  );
}

/** The version label of internal_services_tekton_info: the version read when it is a plain token, else "unknown". */
export function versionLabel(state: TektonVersionState): string {
  const v = state.version;
  return v !== undefined && /^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$/.test(v) ? v : 'unknown';
}

/** The reason of Pipelines in the components' gauge: ok (no known advisory), advisory, or unknown (the version cannot be told). */
export function pipelinesReason(state: TektonVersionState): VersionReason {
  if (clean(state)) return 'ok';
  return unknown(state) ? 'unknown' : 'advisory';
}

/** internal_services_tekton_advisories: 1 or 0 for every advisory of the table and for unknown-version (a bounded label set). */
export function advisoryGauge(state: TektonVersionState): Record<string, number> {
  const on = new Set(state.advisories.map((a) => a.id));
  return Object.fromEntries([...ADVISORIES, UNKNOWN_VERSION].map((a) => [a.id, on.has(a.id) ? 1 : 0]));
}

export interface TektonVersionOptions {
  /** Tekton's namespace (--tekton-namespace). */
  namespace: string;
  /** Reads a ConfigMap: undefined on 404, throws on any other error (configMapReader(internal)). */
  read(namespace: string, name: string): Promise<ConfigMapLike | undefined>;
  log: Logger;
  /** --refuse-resolvers-on-advisory (only for the log line). */
  refuseResolversOnAdvisory?: boolean;
  /** The other components to follow (Results, Chains), each with the namespace its info ConfigMap is read in. */
  components?: ReadonlyArray<{ readonly component: RangedComponent; readonly namespace: string }>;
  /** Time between two reads (default 60 s). */
  refreshMs?: number;
  /**
   * Warning Events: recorded on target() (the InternalServicesConfig of the
   * controller's namespace, where the controller may write Events) when the
   * reported state changes; a change seen while there is no target is
   * recorded once there is one.
   */
  events?: {
    record(obj: KubeObject, type: 'Warning', reason: string, message: string): Promise<void>;
    target(): KubeObject | undefined;
  };
}

/** A ConfigMap reader on a cluster: undefined on 404. */
export function configMapReader(cluster: Cluster): TektonVersionOptions['read'] {
  return async (namespace, name) => {
    try {
      return (await cluster.core.readNamespacedConfigMap({ namespace, name })) as ConfigMapLike;
    } catch (e) {
      if (statusCode(e) === 404) return undefined;
      throw e;
    }
  };
}

/** What the state reports, as a key: a change of it is logged and recorded once. */
function reportKey(state: TektonVersionState): string {
  return JSON.stringify([state.version ?? null, state.advisories.map((a) => a.id), unknown(state) ? (state.problem ?? '') : '']);
}

/** A component besides Pipelines as the follower keeps it. */
interface Followed {
  readonly component: RangedComponent;
  readonly namespace: string;
  readonly source: string;
  state: ComponentState;
  /** componentReportKey() of what was last logged. */
  reported: string;
}

/** Follows the internal cluster's Tekton Pipelines version, and those of the other components given (see the module comment). */
export class TektonVersion extends PeriodicRead {
  private state: TektonVersionState;
  private reported = '';
  /** Warning Events still to be recorded (there was no target), by component: the last one of each. */
  private readonly pendingEvents = new Map<string, { reason: string; message: string }>();
  readonly source: string;
  /** The other components, with their state and what was last reported of it. */
  private readonly others: Followed[];

  constructor(private readonly opts: TektonVersionOptions) {
    super(opts.refreshMs ?? 60_000);
    this.source = `${opts.namespace}/${PIPELINES_INFO}`;
    this.state = pendingState(this.source);
    this.others = (opts.components ?? []).map(({ component, namespace }) => {
      const source = componentSource(component, namespace);
      return { component, namespace, source, state: componentPending(component, source), reported: '' };
    });
  }

  /** The state now (the getter the controller is given). */
  current(): TektonVersionState {
    return this.state;
  }

  /** The other components' states now, in the order given. */
  components(): ComponentState[] {
    return this.others.map((o) => o.state);
  }




  /** The Pipelines check (tekton-version). */
  readiness(): ReadinessCheck {
    return versionReadiness(this.state);
  }

  /** Every check: Pipelines', then one per other component. */
  readinessChecks(): ReadinessCheck[] {
    return [versionReadiness(this.state), ...this.others.map((o) => componentReadiness(o.component, o.state))];
  }

  /** The gauges' values (src/metrics.ts). */
  metrics(): { version: string; advisories: Record<string, number> } {
    return { version: versionLabel(this.state), advisories: advisoryGauge(this.state) };
  }

  /** internal_services_tekton_component_status: per component, 1 for its reason and 0 for its others. */
  componentStatus(): Record<string, Record<string, number>> {
    return Object.fromEntries([['pipelines', reasonGauge('pipelines', pipelinesReason(this.state))], ...this.others.map((o) => [o.component.id, reasonGauge(o.component.id, o.state.reason)])]);
  }


  /** One get: the ConfigMap (undefined: 404), or why not. */
  private async readConfigMap(namespace: string, name: string): Promise<ReadOutcome> {
    try {
      return { configMap: await this.opts.read(namespace, name) };
    } catch (e) {
      return { error: describeError(e), code: statusCode(e) };
    }
  }

  protected async readOnce(): Promise<void> {
    const [outcome, ...others] = await Promise.all([
      this.readConfigMap(this.opts.namespace, PIPELINES_INFO),
      ...this.others.map((o) => this.readConfigMap(o.namespace, o.component.configMap)),
    ]);
    const before = this.state;
    this.state = stateAfterRead(before, this.source, outcome!);
    this.report(before);
    this.others.forEach((o, i) => {
      const prev = o.state;
      o.state = componentAfterRead(o.component, prev, o.source, others[i]!);
      this.reportComponent(o, prev);
    });
    await this.recordPending();
  }

  /** Logs a changed state, and queues its Warning Event. */
  private report(before: TektonVersionState): void {
    const s = this.state;
    const key = reportKey(s);
    if (key === this.reported) {
      // Same version and advisories; a re-read that failed or recovered is worth a debug line.
      if (s.problem !== before.problem) this.opts.log.debug({ tekton: this.source, version: s.version, problem: s.problem }, 'Tekton Pipelines version re-read');
      return;
    }
    this.reported = key;
    const message = advisoryMessage(s);
    const fields = { tekton: this.source, version: s.version ?? 'unknown', advisories: s.advisories.map((a) => a.id), ...(s.problem ? { problem: s.problem } : {}) };
    if (clean(s)) {
      this.opts.log.info(fields, message);
      this.pendingEvents.delete('pipelines');
      return;
    }
    const refusing = this.opts.refuseResolversOnAdvisory ? ` Requests with resolver references are refused meanwhile (${REFUSE_FLAG}).` : '';
    this.opts.log.warn(fields, `${message}.${refusing}`);
    this.pendingEvents.set('pipelines', { reason: unknown(s) ? 'TektonVersionUnknown' : 'TektonAdvisory', message: `${message}.${refusing}` });
  }

  /** Logs a component's changed verdict, and queues its Warning Event when it is outside the supported range. */
  private reportComponent(o: Followed, before: ComponentState): void {
    const s = o.state;
    const key = componentReportKey(s);
    if (key === o.reported) {
      if (s.problem !== before.problem) this.opts.log.debug({ tekton: o.source, component: s.component, version: s.version, problem: s.problem }, `${o.component.name} version re-read`);
      return;
    }
    o.reported = key;
    const message = componentMessage(o.component, s);
    const fields = { tekton: o.source, component: s.component, version: s.version ?? 'unknown', reason: s.reason, ...(s.problem ? { problem: s.problem } : {}) };
    const reason = componentEventReason(s);
    if (!reason) {
      this.opts.log.info(fields, message);
      this.pendingEvents.delete(s.component);
      return;
    }
    this.opts.log.warn(fields, message);
    this.pendingEvents.set(s.component, { reason, message });
  }

  private async recordPending(): Promise<void> {
    const target = this.pendingEvents.size ? this.opts.events?.target() : undefined;
    if (!target) return;
    const events = [...this.pendingEvents.values()];
    this.pendingEvents.clear();
    for (const ev of events) await this.opts.events!.record(target, 'Warning', ev.reason, ev.message);
  }
}
