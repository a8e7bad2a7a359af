/**
 * The remote providers of `internal-services controller` (src/remotes/), all
 * built here the same way from the flags: each adds and removes remotes
 * through the controller as its source says.
 */
import { slimRequest } from '../requests/cached-requests.js';
import { statSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { ConfigError } from '../errors.js';
import type { Cluster } from '../kube/client.js';
import type { Metrics } from '../metrics.js';
import { RemoteDirectory } from '../remotes/directory.js';
import { KcpRemotes } from '../remotes/kcp.js';
import { KubeconfigRemote } from '../remotes/kubeconfig.js';
import type { RemoteProvider, RemoteSink } from '../remotes/provider.js';
import { RemoteSecrets } from '../remotes/secrets.js';

/** The flags the providers are built from (a part of ControllerFlags). */
export interface ProviderFlags {
  remoteName: string;
  remoteSecretsSelector?: string;
  remoteSecret?: string[];
  remoteSecretsNamespace?: string;
  remoteKubeconfigDir?: string;
  remoteKubeconfigDirInterval: number;
  kcpExport: string;
  kcpEndpointSlice?: string;
  kcpWorkspaceParent?: string[];
  kcpRefreshInterval: number;
  kcpUnbindGrace: number;
  resyncPeriod: number;
  remoteMode: 'watch' | 'poll';
  pollInterval: number;
}

export interface ProviderContext {
  /** The --remote-kubeconfig cluster, if given. */
  remote: Cluster | undefined;
  kcpKubeconfig: KubeConfig | undefined;
  internal: Cluster;
  namespace: string;
  log: Logger;
  metrics: Metrics;
}

/** Refuses flags that give no remote at all, or a --remote-kubeconfig-dir that is not a directory. */
export function checkProviderFlags(flags: Pick<ProviderFlags, 'remoteSecretsSelector' | 'remoteSecret' | 'remoteKubeconfigDir'> & { remoteKubeconfig?: string; kcpKubeconfig?: string }): void {
  if (!flags.remoteKubeconfig && !flags.remoteSecretsSelector && !flags.remoteSecret?.length && !flags.remoteKubeconfigDir && !flags.kcpKubeconfig) {
    throw new ConfigError('CONFIG_FLAG', 'no remote cluster: give --remote-kubeconfig, kubeconfig Secrets with --remote-secrets-selector or --remote-secret, a directory of kubeconfigs with --remote-kubeconfig-dir, or a kcp provider workspace with --kcp-kubeconfig');
  }
  if (flags.remoteKubeconfigDir === undefined) return;
  let dir = false;
  try {
    dir = statSync(flags.remoteKubeconfigDir).isDirectory();
  } catch {
    // reported below
  }
  if (!dir) throw new ConfigError('CONFIG_FLAG', `--remote-kubeconfig-dir ${JSON.stringify(flags.remoteKubeconfigDir)} is not a directory that can be read (mount the Secrets there)`);
}

export function remoteProviders(sink: RemoteSink, flags: ProviderFlags, ctx: ProviderContext): { providers: RemoteProvider[]; kubeconfigRemote: KubeconfigRemote | undefined; kcp: KcpRemotes | undefined } {
  const { remote, internal, namespace, log, metrics } = ctx;
  const kcpKc = ctx.kcpKubeconfig;
  const remoteMode = { mode: flags.remoteMode, pollIntervalMs: flags.pollInterval };
  const providers: RemoteProvider[] = [];
  // One kubeconfig (--remote-kubeconfig): its remote is added before the
  // caches start (runController's start()), so that they wait for its first list.
  const kubeconfigRemote = remote ? new KubeconfigRemote(sink, { name: flags.remoteName, cluster: remote, mode: remoteMode }) : undefined;
  if (kubeconfigRemote) providers.push(kubeconfigRemote);
  if (flags.remoteSecretsSelector || flags.remoteSecret?.length) {
    providers.push(
      new RemoteSecrets(sink, {
        internal,
        namespace: flags.remoteSecretsNamespace ?? namespace,
        selector: flags.remoteSecretsSelector,
        names: flags.remoteSecret,
        reserved: new Set(remote ? [flags.remoteName] : []),
        defaultMode: remoteMode,
        log,
        resyncPeriodMs: flags.resyncPeriod,
        informerObserver: metrics.controller.informer,
        apiObserver: metrics.apiObserver,
      }),
    );
  }
  if (flags.remoteKubeconfigDir) {
    providers.push(
      new RemoteDirectory(sink, {
        dir: flags.remoteKubeconfigDir,
        intervalMs: flags.remoteKubeconfigDirInterval,
        reserved: new Set(remote ? [flags.remoteName] : []),
        mode: remoteMode,
        log,
        apiObserver: metrics.apiObserver,
      }),
    );
  }
  let kcp: KcpRemotes | undefined;
  if (kcpKc) {
    providers.push(
      (kcp = new KcpRemotes(sink, {
        kubeconfig: kcpKc,
        exportName: flags.kcpExport,
        ...(flags.kcpEndpointSlice ? { endpointSlice: flags.kcpEndpointSlice } : {}),
        // What the caches keep of a request, as for every other remote (src/requests/cached-requests.ts).
        transform: slimRequest,
        ...(flags.kcpWorkspaceParent?.length ? { workspaceParents: flags.kcpWorkspaceParent } : {}),
        pathRefreshMs: flags.kcpRefreshInterval,
        unbindGraceMs: flags.kcpUnbindGrace,
        log,
        resyncPeriodMs: flags.resyncPeriod,
        informerObserver: metrics.controller.informer,
        apiObserver: metrics.apiObserver,
      })),
    );
  }
  return { providers, kubeconfigRemote, kcp };
}

/** The kcp provider workspace's kubeconfig: readable, with a current cluster and user. */
export function readKcpKubeconfig(path: string): KubeConfig {
  const kc = new KubeConfig();
  try {
    kc.loadFromFile(path);
  } catch (e) {
    throw new ConfigError('CONFIG_KUBECONFIG', `cannot read the kcp kubeconfig ${path}: ${(e as Error).message}`);
  }
  if (!kc.getCurrentCluster() || !kc.getCurrentUser()) throw new ConfigError('CONFIG_KUBECONFIG', `the kcp kubeconfig ${path} names no current context/cluster/user`);
  return kc;
}
