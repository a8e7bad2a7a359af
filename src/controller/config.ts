/** The controller's effective configuration, from the InternalServicesConfig named `config`. */
import type { InternalServicesConfig } from '../api/types.js';
import { gitRuleFromAllowedURLs, type BundleRule, type GitRule, type SourcePolicy } from '../policy/source.js';
import { parseDuration } from '../util/duration.js';
import type { Limits, TimeoutPolicy } from '../policy/limits.js';
import { MAX_PARAM_VALUE_BYTES, MAX_PARAMS_BYTES } from '../api/types.js';

export interface EffectiveConfig {
  allowList: ReadonlySet<string>;
  debug: boolean;
  volumeClaim: { name: string; size: string };
  allowedServiceAccounts: ReadonlySet<string>;
  /** Which remote sources may be resolved (sources and allowedGitResolverURLs); default deny. */
  sources: SourcePolicy;
  /** How long one resolution may take. */
  resolutionTimeoutMs: number;
  limits: Limits;
  timeouts: TimeoutPolicy;
  /** False when there is no InternalServicesConfig "config": new requests wait instead of being decided. */
  present: boolean;
  /** Where the values came from, for messages: "internal-services/config" or "defaults". */
  source: string;
}

export const DEFAULT_VOLUME_CLAIM = { name: 'workspace', size: '1Gi' } as const;
export const DEFAULT_RESOLUTION_TIMEOUT_MS = 120_000;
export const DEFAULT_MAX_PARAMS_BYTES = 524288;
export const DEFAULT_MAX_TIMEOUT = '24h';

/**
 * Defaults apply when there is no config (deny everything). The API server
 * validates and defaults the object; this only guards against objects stored
 * before the schema had a field.
 */
export function effectiveConfig(cfg: InternalServicesConfig | undefined, namespace: string): EffectiveConfig {
  const spec = cfg?.spec ?? {};
  const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
  const source = cfg ? `InternalServicesConfig ${namespace}/${cfg.metadata.name}` : `defaults (no InternalServicesConfig "config" in namespace ${namespace})`;
  const src = spec.sources ?? {};
  const git: GitRule[] = (Array.isArray(src.git) ? src.git : [])
    .filter((r) => strings(r?.urls).length > 0)
    .map((r) => ({
      urls: strings(r.urls),
      revisions: strings(r.revisions),
      commits: r.commits === true,
      ...(r.paths !== undefined ? { paths: strings(r.paths) } : {}),
      ...(r.namespaces !== undefined ? { namespaces: strings(r.namespaces) } : {}),
    }));
  const allowedURLs = strings(spec.allowedGitResolverURLs);
  if (allowedURLs.length) git.push(gitRuleFromAllowedURLs(allowedURLs));
  const bundles: BundleRule[] = (Array.isArray(src.bundles) ? src.bundles : [])
    .filter((r) => strings(r?.repositories).length > 0)
    .map((r) => ({ repositories: strings(r.repositories), digestOnly: r.digestOnly === true, ...(r.namespaces !== undefined ? { namespaces: strings(r.namespaces) } : {}) }));
  const timeout = typeof src.resolutionTimeout === 'string' ? parseDuration(src.resolutionTimeout) : undefined;
  const int = (v: unknown, dflt: number, max: number) => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? Math.min(v, max) : dflt);
  const t = spec.timeouts ?? {};
  const durations = (d: unknown) => {
    const o = (typeof d === 'object' && d !== null ? d : {}) as Record<string, unknown>;
    const out: Record<string, string> = {};
    for (const k of ['pipeline', 'tasks', 'finally']) if (typeof o[k] === 'string' && parseDuration(o[k] as string) !== undefined) out[k] = o[k] as string;
    return out;
  };
  const maximum = parseDuration(typeof t.maximum === 'string' ? t.maximum : DEFAULT_MAX_TIMEOUT);
  return {
    allowList: new Set(strings(spec.allowList)),
    debug: spec.debug === true,
    volumeClaim: {
      name: typeof spec.volumeClaim?.name === 'string' && spec.volumeClaim.name ? spec.volumeClaim.name : DEFAULT_VOLUME_CLAIM.name,
      size: typeof spec.volumeClaim?.size === 'string' && spec.volumeClaim.size ? spec.volumeClaim.size : DEFAULT_VOLUME_CLAIM.size,
    },
    allowedServiceAccounts: new Set(strings(spec.allowedServiceAccounts)),
    sources: { git, bundles, cluster: src.cluster === true, source },
    resolutionTimeoutMs: timeout && timeout > 0 ? timeout : DEFAULT_RESOLUTION_TIMEOUT_MS,
    limits: {
      maxParamValueBytes: int(spec.limits?.maxParamValueBytes, MAX_PARAM_VALUE_BYTES, MAX_PARAM_VALUE_BYTES),
      maxParamsBytes: int(spec.limits?.maxParamsBytes, DEFAULT_MAX_PARAMS_BYTES, MAX_PARAMS_BYTES),
    },
    timeouts: { defaults: durations(t.defaults), maximumMs: maximum === undefined || maximum === 0 ? undefined : maximum, allowNoTimeout: t.allowNoTimeout === true },
    present: cfg !== undefined,
    source,
  };
}

/** True when some rule opens remote resolution at all. */
export function allowsRemoteSources(c: EffectiveConfig): boolean {
  return c.sources.git.length > 0 || c.sources.bundles.length > 0 || c.sources.cluster;
}
