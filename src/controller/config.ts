/** The controller's effective configuration, from the InternalServicesConfig named `config`. */
import type { InternalServicesConfig } from '../api/types.js';

export interface EffectiveConfig {
  allowList: ReadonlySet<string>;
  debug: boolean;
  volumeClaim: { name: string; size: string };
  allowedServiceAccounts: ReadonlySet<string>;
  /** Where the values came from, for messages: "internal-services/config" or "defaults". */
  source: string;
}

export const DEFAULT_VOLUME_CLAIM = { name: 'workspace', size: '1Gi' } as const;

/**
 * Defaults apply when there is no config (deny everything). The API server
 * validates and defaults the object; this only guards against objects stored
 * before the schema had a field.
 */
export function effectiveConfig(cfg: InternalServicesConfig | undefined, namespace: string): EffectiveConfig {
  const spec = cfg?.spec ?? {};
  const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
  return {
    allowList: new Set(strings(spec.allowList)),
    debug: spec.debug === true,
    volumeClaim: {
      name: typeof spec.volumeClaim?.name === 'string' && spec.volumeClaim.name ? spec.volumeClaim.name : DEFAULT_VOLUME_CLAIM.name,
      size: typeof spec.volumeClaim?.size === 'string' && spec.volumeClaim.size ? spec.volumeClaim.size : DEFAULT_VOLUME_CLAIM.size,
    },
    allowedServiceAccounts: new Set(strings(spec.allowedServiceAccounts)),
    source: cfg ? `InternalServicesConfig ${namespace}/${cfg.metadata.name}` : `defaults (no InternalServicesConfig "config" in namespace ${namespace})`,
  };
}
