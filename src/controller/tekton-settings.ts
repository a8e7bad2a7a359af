/**
 * The internal cluster's Tekton settings that change what a reference means
 * (src/tekton/settings.ts): default-resolver-type of ConfigMap
 * `config-defaults` in Tekton's namespace (--tekton-namespace), and the
 * resolvers turned on and off by ConfigMap `resolvers-feature-flags` in the
 * resolvers' namespace (--tekton-resolvers-namespace).
 *
 * Followed as the Tekton version is (src/controller/tekton-version.ts): a
 * plain get of each ConfigMap at start and again every refresh period
 * (--tekton-version-interval); Tekton grants no read of them, the
 * controller's ClusterRole does (get, by name). A re-read that fails for a
 * passing reason (network, 5xx, 403) keeps what was read before and says so;
 * a ConfigMap that is gone (404), or a first read that fails, makes its part
 * unknown, with why.
 *
 * Reported, never acted on here (the controller refuses a reference with
 * neither name nor resolver whatever the settings): an advisory /readyz
 * check (tekton-settings; never makes the controller unready, [-] only while
 * a setting is unknown), the gauge internal_services_tekton_setting{setting,
 * value}, and a log line when what is in force changes.
 */
import { PeriodicRead } from './periodic-read.js';
import type { Logger } from 'pino';
import { describeError, statusCode } from '../kube/client.js';
import type { ReadinessCheck } from '../kube/informer.js';
import {
  CONFIG_DEFAULTS,
  describeSettings,
  parseDefaultResolver,
  parseResolverFlags,
  RESOLVERS_FEATURE_FLAGS,
  RESOLVERS_NAMESPACE_SUFFIX,
  settingsGauge,
  settingsKnown,
  type DefaultResolver,
  type ResolverFlags,
  type SettingsSources,
  type TektonSettings,
} from '../tekton/settings.js';
import type { ConfigMapLike, ReadOutcome, TektonVersionOptions } from './tekton-version.js';

/** The readiness check's name. */
export const SETTINGS_READINESS_NAME = 'tekton-settings';
/** What to do when a ConfigMap may not be read. */
const GRANT = 'grant the controller get on it (config/rbac/internal/cluster_role.yaml; the chart\'s clusterrole.yaml)';

/** The resolvers' namespace Tekton's release uses for a Tekton namespace. */
export function defaultResolversNamespace(tektonNamespace: string): string {
  return `${tektonNamespace}${RESOLVERS_NAMESPACE_SUFFIX}`;
}

export interface TektonSettingsState {
  readonly settings: TektonSettings;
  readonly sources: SettingsSources;
  /** Why a re-read failed while what was read before is kept, one per ConfigMap. */
  readonly problems: readonly string[];
  /** false until the first read has ended (answered or failed). */
  readonly settled: boolean;
}

export function pendingSettings(sources: SettingsSources): TektonSettingsState {
  const why = 'not read yet';
  return { settings: { defaultResolver: { kind: 'unknown', why }, resolvers: { kind: 'unknown', why } }, sources, problems: [], settled: false };
}

/** Why a read failed, with what to do on a 403. */
function failure(source: string, read: { error: string; code?: number | undefined }): string {
  return `ConfigMap ${source} cannot be read: ${read.error}${read.code === 403 ? `; ${GRANT}` : ''}`;
}

/** One part after a read: parsed, or on a failed re-read the part read before kept (unless the ConfigMap is gone), else unknown. */
function partAfterRead<T extends DefaultResolver | ResolverFlags>(prev: T, source: string, read: ReadOutcome, parse: (source: string, data: Record<string, string> | undefined) => T): { part: T; problem?: string } {
  if ('configMap' in read) return { part: parse(source, read.configMap ? (read.configMap.data ?? {}) : undefined) };
  const why = failure(source, read);
  if (prev.kind !== 'unknown' && read.code !== 404) return { part: prev, problem: `${why}; what was read before is kept` };
  return { part: { kind: 'unknown', why } as T };
}

/** The state after reading both ConfigMaps. */
export function settingsAfterRead(prev: TektonSettingsState, defaults: ReadOutcome, flags: ReadOutcome): TektonSettingsState {
  const d = partAfterRead(prev.settings.defaultResolver, prev.sources.defaults, defaults, parseDefaultResolver);
  const f = partAfterRead(prev.settings.resolvers, prev.sources.flags, flags, parseResolverFlags);
  return {
    settings: { defaultResolver: d.part, resolvers: f.part },
    sources: prev.sources,
    problems: [d.problem, f.problem].filter((p): p is string => p !== undefined),
    settled: true,
  };
}

/** The /readyz line, and the log line: what is in force, and any re-read that failed. */
export function settingsMessage(state: TektonSettingsState): string {
  return `${describeSettings(state.settings, state.sources)}${state.problems.length ? ` (${state.problems.join('; ')})` : ''}`;
}

/** The /readyz check: informational (never required); [-] only while a setting is unknown. */
export function settingsReadiness(state: TektonSettingsState): ReadinessCheck {
  return { name: SETTINGS_READINESS_NAME, ok: settingsKnown(state.settings), required: false, detail: settingsMessage(state) };
}

export interface TektonSettingsOptions {
  /** Tekton's namespace (--tekton-namespace): config-defaults. */
  namespace: string;
  /** The resolvers' namespace (--tekton-resolvers-namespace): resolvers-feature-flags. */
  resolversNamespace: string;
  /** Reads a ConfigMap: undefined on 404, throws on any other error (configMapReader(internal)). */
  read: TektonVersionOptions['read'];
  log: Logger;
  /** Time between two reads (default 60 s). */
  refreshMs?: number;
}

/** Follows the Tekton settings (see the module comment). */
export class TektonSettingsFollower extends PeriodicRead {
  private state: TektonSettingsState;
  private reported = '';

  constructor(private readonly opts: TektonSettingsOptions) {
    super(opts.refreshMs ?? 60_000);
    this.state = pendingSettings({ defaults: `${opts.namespace}/${CONFIG_DEFAULTS}`, flags: `${opts.resolversNamespace}/${RESOLVERS_FEATURE_FLAGS}` });
  }

  current(): TektonSettingsState {
    return this.state;
  }




  readiness(): ReadinessCheck {
    return settingsReadiness(this.state);
  }

  /** internal_services_tekton_setting: one series of value 1 per setting. */
  metrics(): Array<{ setting: string; value: string }> {
    return settingsGauge(this.state.settings);
  }


  private async readConfigMap(namespace: string, name: string): Promise<ReadOutcome> {
    try {
      return { configMap: (await this.opts.read(namespace, name)) as ConfigMapLike | undefined };
    } catch (e) {
      return { error: describeError(e), code: statusCode(e) };
    }
  }

  protected async readOnce(): Promise<void> {
    const [defaults, flags] = await Promise.all([this.readConfigMap(this.opts.namespace, CONFIG_DEFAULTS), this.readConfigMap(this.opts.resolversNamespace, RESOLVERS_FEATURE_FLAGS)]);
    const before = this.state;
    this.state = settingsAfterRead(before, defaults, flags);
    this.report(before);
  }

  /** Logs what is in force when it changes (info; warn while something is unknown); a re-read that failed or recovered, at debug. */
  private report(before: TektonSettingsState): void {
    const s = this.state;
    const d = s.settings.defaultResolver;
    const key = JSON.stringify([d.kind === 'set' ? d.value : d.kind, d.kind === 'unknown' ? d.why : '', s.settings.resolvers]);
    const message = `Tekton settings: ${settingsMessage(s)}`;
    if (key === this.reported) {
      if (s.problems.join() !== before.problems.join()) this.opts.log.debug({ tektonSettings: s.sources, problems: s.problems }, message);
      return;
    }
    this.reported = key;
    const fields = { tektonSettings: s.sources, settings: Object.fromEntries(settingsGauge(s.settings).map((g) => [g.setting, g.value])), ...(s.problems.length ? { problems: s.problems } : {}) };
    if (settingsKnown(s.settings)) this.opts.log.info(fields, message);
    else this.opts.log.warn(fields, message);
  }
}
