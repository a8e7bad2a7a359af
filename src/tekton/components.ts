/**
 * The Tekton components besides Pipelines whose versions the controller
 * checks (Tekton Results and Tekton Chains), their supported ranges, and the
 * verdict on a version read from the cluster. Pure: a table, a state machine
 * over read outcomes, and messages; no clock, no I/O (the follower,
 * src/controller/tekton-version.ts, does the reading).
 *
 * What is read, as verified in the released sources (docs/deploying.md,
 * "Supported Tekton versions"):
 *
 * - Tekton Results ships the ConfigMap `tekton-results-info`
 *   (config/base/config-info.yaml: `info`, with the kustomize namePrefix
 *   `tekton-results-` of config/components/metadata) in the namespace of its
 *   release, `tekton-pipelines` (release/kustomization.yaml and the overlays'
 *   `namespace:`); release/release.sh and tekton/publish.yaml replace its
 *   `version: devel` with the release tag. A Role and RoleBinding of the same
 *   name let every authenticated user get that one ConfigMap. Checked in
 *   v0.15.0 and v0.20.0.
 * - Tekton Chains ships the ConfigMap `chains-info` (config/config-info.yaml)
 *   in `tekton-chains`; release/publish.yaml rewrites `version: "devel"` to
 *   the release tag, and the Role and RoleBinding `tekton-chains-info`
 *   (config/100-rolebinding.yaml) let every authenticated user get it.
 *   Checked in v0.22.0, v0.28.1 and v0.29.1.
 *
 * Their Deployments carry the version too (Results: the label
 * app.kubernetes.io/version; Chains: `version` and pipeline.tekton.dev/release),
 * but reading them would need list on Deployments; the info ConfigMaps are
 * made to be read by anyone and exist in every supported release.
 *
 * Pipelines has its own rules (src/tekton/advisories.ts); it is named here
 * only for the reasons of the shared gauge.
 */
import type { ReadinessCheck } from '../kube/informer.js';
import { compareTektonVersions, parseTektonVersion, type TektonRelease } from './advisories.js';

/** The components whose version is checked: a bounded metric label. */
export type ComponentId = 'pipelines' | 'results' | 'chains';

/**
 * Why a component is reported as it is: a bounded metric label.
 * - ok: a release in the supported range (Pipelines: with no known advisory);
 * - not_installed: there is no info ConfigMap (Results and Chains only);
 * - too_old: a release older than the supported range;
 * - newer_than_tested: a release of a line after the last tested one (advisory only);
 * - advisory: a Pipelines release with a known advisory (src/tekton/advisories.ts);
 * - unknown: the version cannot be told (not a release version, no data.version, the ConfigMap cannot be read).
 */
export type VersionReason = 'ok' | 'not_installed' | 'too_old' | 'newer_than_tested' | 'advisory' | 'unknown';

/** The reasons each component can have (the series of its gauge). */
export const COMPONENT_REASONS: Readonly<Record<ComponentId, readonly VersionReason[]>> = {
  pipelines: ['ok', 'advisory', 'unknown'],
  results: ['ok', 'not_installed', 'too_old', 'newer_than_tested', 'unknown'],
  chains: ['ok', 'not_installed', 'too_old', 'newer_than_tested', 'unknown'],
};

/** A component checked against a supported range of releases. */
export interface RangedComponent {
  readonly id: 'results' | 'chains';
  /** "Tekton Results". */
  readonly name: string;
  /** The ConfigMap whose data.version says the version. */
  readonly configMap: string;
  /** Where its release installs it. */
  readonly releaseNamespace: string;
  /** The Role (and RoleBinding) of the release that lets every authenticated user get the ConfigMap. */
  readonly infoRole: string;
  /** The first supported release: the one the controller is built and tested against (hack/platform/versions.env). */
  readonly supportedFrom: string;
  /** The last supported minor line ("0.20"): a release of a later line is newer than tested. */
  readonly supportedThrough: string;
  /** What the controller relies on of it (for the messages). */
  readonly reliance: string;
}

export const RESULTS: RangedComponent = {
  id: 'results',
  name: 'Tekton Results',
  configMap: 'tekton-results-info',
  releaseNamespace: 'tekton-pipelines',
  infoRole: 'tekton-results-info',
  supportedFrom: 'v0.15.0',
  supportedThrough: '0.20',
  reliance: 'with --results-url, finished PipelineRuns are pruned only once Results has stored them, and the logs of pruned runs are read from its API (results.tekton.dev/v1alpha2)',
};

export const CHAINS: RangedComponent = {
  id: 'chains',
  name: 'Tekton Chains',
  configMap: 'chains-info',
  releaseNamespace: 'tekton-chains',
  infoRole: 'tekton-chains-info',
  supportedFrom: 'v0.22.0',
  supportedThrough: '0.29',
  reliance: 'with spec.chains.enabled, a run is reported and removed only once Chains has marked it (chains.tekton.dev/signed) and stored its signed provenance on it',
};

export const RANGED_COMPONENTS: readonly RangedComponent[] = [RESULTS, CHAINS];

/** Where the supported versions are explained. */
export const VERSIONS_DOCS = 'docs/deploying.md, "Supported Tekton versions"';

function release(v: string): TektonRelease {
  const r = parseTektonVersion(v);
  if (!r) throw new Error(`not a release version: ${v}`);
  return r;
}

/** "v0.15.0 through v0.20.x". */
export function rangeText(c: RangedComponent): string {
  return `${c.supportedFrom} through v${c.supportedThrough}.x`;
}

/** The verdict on a version string alone: where it lies against the range, or unknown when it is not a release version. */
export function rangeVerdict(c: RangedComponent, version: string): 'ok' | 'too_old' | 'newer_than_tested' | 'unknown' {
  const v = parseTektonVersion(version);
  if (!v) return 'unknown';
  if (compareTektonVersions(v, release(c.supportedFrom)) < 0) return 'too_old';
  const [major, minor] = c.supportedThrough.split('.').map(Number) as [number, number];
  if (v.major > major || (v.major === major && v.minor > minor)) return 'newer_than_tested';
  return 'ok';
}

/** The state of one component, as last read. */
export interface ComponentState {
  readonly component: RangedComponent['id'];
  /** namespace/name of the ConfigMap. */
  readonly source: string;
  /** data.version as read (trimmed, whole), or undefined: not read (yet), no ConfigMap, no data.version, cannot be read. */
  readonly version: string | undefined;
  readonly reason: Exclude<VersionReason, 'advisory'>;
  /** Why the version is unknown, or why the last re-read failed (the verdict read before is kept then). */
  readonly problem?: string;
  /** false until the first read has ended. */
  readonly settled: boolean;
}

/** The outcome of one read of an info ConfigMap: it (undefined: 404), or an error. */
export type InfoRead = { configMap: { data?: Record<string, string> | undefined } | undefined } | { error: string; code?: number | undefined };

export function componentSource(c: RangedComponent, namespace: string): string {
  return `${namespace}/${c.configMap}`;
}

/** Before the first read: nothing is known yet. */
export function componentPending(c: RangedComponent, source: string): ComponentState {
  return { component: c.id, source, version: undefined, reason: 'unknown', problem: 'not read yet', settled: false };
}

/** The version as it may be shown: quoted characters escaped (a control character cannot break a line), cut after 64 with its length said. */
export function shownVersion(version: string): string {
  const body = JSON.stringify(version.slice(0, 64)).slice(1, -1);
  return version.length > 64 ? `${body}… (${version.length} characters)` : body;
}

/** The state a ConfigMap, or its absence (not installed), says. */
export function componentFromConfigMap(c: RangedComponent, source: string, cm: { data?: Record<string, string> | undefined } | undefined): ComponentState {
  if (!cm) return { component: c.id, source, version: undefined, reason: 'not_installed', settled: true };
  const raw = cm.data?.['version'];
  if (typeof raw !== 'string' || raw.trim() === '') return { component: c.id, source, version: undefined, reason: 'unknown', problem: `ConfigMap ${source} has no data.version`, settled: true };
  const version = raw.trim();
  const reason = rangeVerdict(c, version);
  return {
    component: c.id,
    source,
    version,
    reason,
    ...(reason === 'unknown' ? { problem: `ConfigMap ${source} says version "${shownVersion(version)}", which is not a release version like ${c.supportedFrom} ("devel" is what a build from source says)` } : {}),
    settled: true,
  };
}

/**
 * The state after a read: a ConfigMap that is gone (404) means not
 * installed; a re-read that fails otherwise (network, 5xx, 403) keeps what
 * was read before, and says so; a first read that fails is unknown.
 */
export function componentAfterRead(c: RangedComponent, prev: ComponentState | undefined, source: string, read: InfoRead): ComponentState {
  if ('configMap' in read) return componentFromConfigMap(c, source, read.configMap);
  if (read.code === 404) return componentFromConfigMap(c, source, undefined);
  const why = `ConfigMap ${source} cannot be read: ${read.error}`;
  if (prev?.settled && prev.reason !== 'unknown') return { ...prev, problem: `${why}; what was read before is kept` };
  return { component: c.id, source, version: undefined, reason: 'unknown', problem: why, settled: true };
}

/** Whether the advisory /readyz check passes: in range, not installed, or newer than tested (reported, not failing). */
export function componentOk(state: ComponentState): boolean {
  return state.reason === 'ok' || state.reason === 'not_installed' || state.reason === 'newer_than_tested';
}

/** The readiness check's name of a component: tekton-results-version, tekton-chains-version. */
export function componentReadinessName(c: RangedComponent): string {
  return `tekton-${c.id}-version`;
}

/** A component's /readyz line: advisory (never makes the controller unready); failing only when too old or unknown. */
export function componentReadiness(c: RangedComponent, state: ComponentState): ReadinessCheck {
  return { name: componentReadinessName(c), ok: componentOk(state), required: false, detail: componentMessage(c, state) };
}

/** One line for the log, the Event and /readyz: the component, its version, where it was read, and why it is reported so. */
export function componentMessage(c: RangedComponent, state: ComponentState): string {
  const at = `ConfigMap ${state.source}`;
  const v = state.version === undefined ? 'unknown' : shownVersion(state.version);
  const kept = state.problem && state.reason !== 'unknown' ? ` (${state.problem})` : '';
  switch (state.reason) {
    case 'not_installed':
      return `${c.name} is not installed (there is no ${at})${kept}`;
    case 'ok':
      return `${c.name} ${v} (${at}): supported (${rangeText(c)})${kept}`;
    case 'newer_than_tested':
      return (
        `${c.name} ${v} (${at}) is newer than tested: the supported range is ${rangeText(c)}. ` +
        `It is expected to work, but this controller has not been tested with it (${c.reliance}); see ${VERSIONS_DOCS}${kept}`
      );
    case 'too_old':
      return (
        `${c.name} ${v} (${at}) is older than supported: the supported range is ${rangeText(c)}, and ${c.reliance}. ` +
        `Upgrade ${c.name} to ${c.supportedFrom} or later; see ${VERSIONS_DOCS}${kept}`
      );
    case 'unknown':
      return (
        `The ${c.name} version cannot be told: ${state.problem ?? 'not a release version'}. ` +
        `Let the controller get ${at} (the release's Role ${c.infoRole} lets every authenticated user get it, ` +
        `and the controller's own ClusterRole grants get on ${c.configMap} in every namespace), and run a release in ${rangeText(c)}; see ${VERSIONS_DOCS}`
      );
  }
}

/** The Warning Event's reason for a state, or undefined when there is nothing to warn about. */
export function componentEventReason(state: ComponentState): string | undefined {
  switch (state.reason) {
    case 'too_old':
      return 'TektonComponentUnsupported';
    case 'newer_than_tested':
      return 'TektonComponentNewerThanTested';
    case 'unknown':
      return 'TektonComponentVersionUnknown';
    default:
      return undefined;
  }
}

/** What the state reports, as a key: a change of it is logged and recorded once (a failed re-read that keeps the verdict is no change). */
export function componentReportKey(state: ComponentState): string {
  return JSON.stringify([state.version ?? null, state.reason, state.reason === 'unknown' ? (state.problem ?? '') : '']);
}

/** The gauge's values for one component: 1 for its reason, 0 for its other reasons. */
export function reasonGauge(component: ComponentId, reason: VersionReason): Record<string, number> {
  return Object.fromEntries(COMPONENT_REASONS[component].map((r) => [r, r === reason ? 1 : 0]));
}
