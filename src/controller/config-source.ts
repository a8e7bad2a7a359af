/**
 * Config assembly: the InternalServicesConfig "config" of the controller's
 * namespace, followed by an informer, and the effective configuration made
 * from it (the pure effectiveConfig() of config.ts), computed again only
 * when the object changes. A change is logged with a summary and reported
 * to the controller (changed, debugOff).
 */
import type { Logger } from 'pino';
import { CONFIG_NAME, INTERNAL_SERVICES_CONFIG, type InternalServicesConfig } from '../api/types.js';
import type { Cluster } from '../kube/client.js';
import { Informer, type InformerOptions } from '../kube/informer.js';
import { effectiveConfig, type EffectiveConfig } from './config.js';

export interface ConfigSourceOptions {
  internal: Cluster;
  namespace: string;
  log: Logger;
  /** The remote bare namespaces name unless the configuration says otherwise. */
  defaultRemote: string | undefined;
  informer: InformerOptions<InternalServicesConfig>;
  /** The configuration came or changed: requests are decided again. */
  changed(): void;
  /** spec.debug was switched off: the PipelineRuns it kept may go now. */
  debugOff(): void;
}

export class ConfigSource {
  readonly informer: Informer<InternalServicesConfig>;
  private memo: { obj: InternalServicesConfig | undefined; value: EffectiveConfig } | undefined;

  constructor(private readonly opts: ConfigSourceOptions) {
    const { namespace, log, defaultRemote } = opts;
    this.informer = new Informer<InternalServicesConfig>(
      'internal/internalservicesconfigs',
      opts.internal.resource<InternalServicesConfig>(INTERNAL_SERVICES_CONFIG),
      {
        onAdd: (c) => {
          log.info({ config: effectiveSummary(c, namespace, defaultRemote) }, 'configuration loaded');
          opts.changed();
        },
        onUpdate: (old, c) => {
          log.info({ config: effectiveSummary(c, namespace, defaultRemote) }, 'configuration changed');
          opts.changed();
          // debug switched off: the PipelineRuns it kept go now, not at the next resync.
          if (old.spec?.debug === true && c.spec?.debug !== true) opts.debugOff();
        },
        onDelete: () => log.warn('configuration deleted; new requests wait (phase WaitingForConfig) until it is back'),
      },
      log,
      { ...opts.informer, namespace, fieldSelector: `metadata.name=${CONFIG_NAME}` },
    );
  }

  /** The effective configuration, computed again only when the cached object changes. */
  current(): EffectiveConfig {
    const obj = this.informer.get(`${this.opts.namespace}/${CONFIG_NAME}`);
    if (!this.memo || this.memo.obj !== obj) this.memo = { obj, value: effectiveConfig(obj, this.opts.namespace, { defaultRemote: this.opts.defaultRemote }) };
    return this.memo.value;
  }

  /** Whether the InternalServicesConfig "config" exists (in the cache). */
  get present(): boolean {
    return this.informer.get(`${this.opts.namespace}/${CONFIG_NAME}`) !== undefined;
  }

  /** The rules of the configuration that cannot be used as written (none without a configuration). */
  problems(): readonly string[] {
    return this.present ? this.current().problems : [];
  }
}

function effectiveSummary(c: InternalServicesConfig, ns: string, defaultRemote: string | undefined) {
  const e = effectiveConfig(c, ns, { defaultRemote });
  return {
    allowList: [...e.allowList],
    bareNamespacesOn: e.bareRemote ?? '(no remote: spec.defaultRemote is not set and there is no --remote-kubeconfig remote)',
    debug: e.debug,
    volumeClaim: e.volumeClaim,
    allowedServiceAccounts: [...e.allowedServiceAccounts],
    sources: { git: e.sources.git.length, bundles: e.sources.bundles.length, http: e.sources.http?.length ?? 0, cluster: e.sources.cluster, resolutionTimeoutMs: e.resolutionTimeoutMs },
    ...(e.problems.length ? { problems: e.problems } : {}),
  };
}
