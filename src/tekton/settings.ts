/**
 * Tekton settings that change what a reference means (pure: no I/O, no clock).
 *
 * Two ConfigMaps of the internal cluster's Tekton say it, as Tekton v1.6.6
 * reads them (github.com/tektoncd/pipeline@v1.6.6):
 *
 * - `config-defaults` in Tekton's namespace (`tekton-pipelines`;
 *   pkg/apis/config/default.go): `default-resolver-type`, taken verbatim
 *   when the key is there (absent or "" means none). Tekton's defaulting
 *   (its webhook, and its reconciler over resolved Pipelines and Tasks) gives
 *   that resolver to every pipelineRef, taskRef and step `ref` with neither a
 *   name nor a resolver (pkg/apis/pipeline/v1/*_defaults.go). So with it set,
 *   a nameless reference is not an error but a resolution by that resolver.
 * - `resolvers-feature-flags` in the resolvers' namespace
 *   (`tekton-pipelines-resolvers`, Tekton's namespace + "-resolvers";
 *   pkg/apis/config/resolver/feature_flags.go): `enable-git-resolver`,
 *   `enable-hub-resolver`, `enable-bundles-resolver`,
 *   `enable-cluster-resolver`, `enable-http-resolver`, each read with Go's
 *   strconv.ParseBool, true when absent. One value it cannot parse makes
 *   Tekton refuse the whole ConfigMap, so what is in force is then unknown.
 *
 * A ConfigMap that is absent or cannot be read makes its part "unknown",
 * with why: never a guess, never a throw.
 */

export const CONFIG_DEFAULTS = 'config-defaults';
export const RESOLVERS_FEATURE_FLAGS = 'resolvers-feature-flags';
export const DEFAULT_RESOLVER_TYPE = 'default-resolver-type';
/** Tekton's ResolversNamespace(): the resolvers run in Tekton's namespace + "-resolvers". */
export const RESOLVERS_NAMESPACE_SUFFIX = '-resolvers';

/** The resolvers Tekton v1.6.6 ships, in the order of its feature flags, with the key that turns each on or off. */
export const RESOLVERS = [
  { id: 'git', flag: 'enable-git-resolver' },
  { id: 'hub', flag: 'enable-hub-resolver' },
  { id: 'bundles', flag: 'enable-bundles-resolver' },
  { id: 'cluster', flag: 'enable-cluster-resolver' },
  { id: 'http', flag: 'enable-http-resolver' },
] as const;
export type ResolverId = (typeof RESOLVERS)[number]['id'];

/** What default-resolver-type is in force: none, a resolver name (verbatim), or unknown (why). */
export type DefaultResolver = { readonly kind: 'unset' } | { readonly kind: 'set'; readonly value: string } | { readonly kind: 'unknown'; readonly why: string };

/** Which resolvers Tekton runs: each on or off, or unknown as a whole (why). */
export type ResolverFlags =
  | { readonly kind: 'known'; readonly enabled: Readonly<Record<ResolverId, boolean>>; /** Flags the ConfigMap does not set (their default, true, holds). */ readonly defaulted: readonly ResolverId[] }
  | { readonly kind: 'unknown'; readonly why: string };

export interface TektonSettings {
  readonly defaultResolver: DefaultResolver;
  readonly resolvers: ResolverFlags;
}

/** The data of a ConfigMap as read ({} for one without data), or undefined: there is no such ConfigMap. */
export type ConfigMapData = Readonly<Record<string, string>> | undefined;

/** A value for a message: short, quoted and escaped when it is not a plain token. */
export function shown(value: string): string {
  return /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/.test(value) ? value : JSON.stringify(value.slice(0, 64));
}

/** Go's strconv.ParseBool: the exact spellings it accepts, else undefined. */
export function goParseBool(s: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(s)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(s)) return false;
  return undefined;
}

/** default-resolver-type as config-defaults (at `source`, namespace/name) says it. */
export function parseDefaultResolver(source: string, data: ConfigMapData): DefaultResolver {
  if (data === undefined) return { kind: 'unknown', why: `there is no ConfigMap ${source}` };
  const value = data[DEFAULT_RESOLVER_TYPE];
  if (typeof value !== 'string' || value === '') return { kind: 'unset' };
  return { kind: 'set', value };
}

/** The resolvers resolvers-feature-flags (at `source`) turns on and off. */
export function parseResolverFlags(source: string, data: ConfigMapData): ResolverFlags {
  if (data === undefined) return { kind: 'unknown', why: `there is no ConfigMap ${source}` };
  const enabled = {} as Record<ResolverId, boolean>;
  const defaulted: ResolverId[] = [];
  for (const { id, flag } of RESOLVERS) {
    const raw = data[flag];
    if (typeof raw !== 'string') {
      enabled[id] = true;
      defaulted.push(id);
      continue;
    }
    const value = goParseBool(raw);
    if (value === undefined) return { kind: 'unknown', why: `ConfigMap ${source} says ${flag}: ${JSON.stringify(raw.slice(0, 64))}, which Tekton cannot read as true or false, so it refuses the whole ConfigMap` };
    enabled[id] = value;
  }
  return { kind: 'known', enabled, defaulted };
}

/** Where the two ConfigMaps are read, as namespace/name. */
export interface SettingsSources {
  readonly defaults: string;
  readonly flags: string;
}

export function settingsFrom(sources: SettingsSources, defaults: ConfigMapData, flags: ConfigMapData): TektonSettings {
  return { defaultResolver: parseDefaultResolver(sources.defaults, defaults), resolvers: parseResolverFlags(sources.flags, flags) };
}

/** Whether every setting is known. */
export function settingsKnown(s: TektonSettings): boolean {
  return s.defaultResolver.kind !== 'unknown' && s.resolvers.kind !== 'unknown';
}

const REFUSED = 'this controller refuses such references at every depth';

/** The default-resolver-type part of the message. */
export function describeDefaultResolver(d: DefaultResolver, source: string): string {
  switch (d.kind) {
    case 'unset':
      return `default-resolver-type: unset (ConfigMap ${source}; a reference with neither name nor resolver gets no resolver and Tekton rejects it; ${REFUSED})`;
    case 'set':
      return `default-resolver-type: ${shown(d.value)} (ConfigMap ${source}; a reference with neither name nor resolver would be resolved by ${shown(d.value)}; ${REFUSED})`;
    case 'unknown':
      return `default-resolver-type: unknown (${d.why}; if set, a reference with neither name nor resolver would be resolved by that resolver; ${REFUSED})`;
  }
}

/** The resolvers part of the message. */
export function describeResolvers(r: ResolverFlags, source: string): string {
  if (r.kind === 'unknown') return `resolvers enabled: unknown (${r.why})`;
  const on = RESOLVERS.filter((x) => r.enabled[x.id]).map((x) => x.id);
  const off = RESOLVERS.filter((x) => !r.enabled[x.id]).map((x) => x.id);
  const defaulted = r.defaulted.length ? `; not set there, so on by default: ${r.defaulted.join(', ')}` : '';
  return `resolvers enabled: ${on.length ? on.join(', ') : 'none'}; ${off.length ? `${off.join(', ')} off` : 'none off'} (ConfigMap ${source}${defaulted})`;
}

/** One line for /readyz and the log: the settings in force, where they were read, and what is unknown and why. */
export function describeSettings(s: TektonSettings, sources: SettingsSources): string {
  return `${describeDefaultResolver(s.defaultResolver, sources.defaults)}; ${describeResolvers(s.resolvers, sources.flags)}`;
}

/** The value label of default-resolver-type in the gauge: unset, a resolver Tekton ships, other (any other name), or unknown. */
export function defaultResolverLabel(d: DefaultResolver): string {
  if (d.kind !== 'set') return d.kind;
  return RESOLVERS.some((r) => r.id === d.value) ? d.value : 'other';
}

/**
 * internal_services_tekton_setting{setting, value}: one series of value 1
 * per setting (a bounded label set): default-resolver-type is unset, a
 * resolver name, other or unknown; each enable-*-resolver is true, false or
 * unknown.
 */
export function settingsGauge(s: TektonSettings): Array<{ setting: string; value: string }> {
  return [
    { setting: DEFAULT_RESOLVER_TYPE, value: defaultResolverLabel(s.defaultResolver) },
    ...RESOLVERS.map(({ id, flag }) => ({ setting: flag, value: s.resolvers.kind === 'known' ? String(s.resolvers.enabled[id]) : 'unknown' })),
  ];
}
