/**
 * Remote clusters from kubeconfig Secrets on the internal cluster, followed
 * while the controller runs: a Secret added is a remote served, a Secret
 * changed (a rotated kubeconfig, another mode) replaces its connection, a
 * Secret deleted stops serving that remote. No restart.
 *
 * Which Secrets: those of one namespace that carry a label (--remote-secrets-
 * selector), and/or Secrets given by name (--remote-secret). RBAC cannot
 * narrow a list to a label, so the name form is the one that lets the Role
 * name exactly the Secrets the controller may read (resourceNames; each is
 * watched with a metadata.name field selector, which RBAC authorizes against
 * resourceNames). See docs/deploying.md.
 *
 * A Secret holds the kubeconfig under data.kubeconfig. The remote is named by
 * the annotation internal-services.appstudio.redhat.com/remote-name, else by
 * the Secret's name; remote-mode and poll-interval annotations choose how its
 * requests are followed. A Secret that cannot be used is reported (log,
 * /readyz detail) and changes nothing: a remote already served from it keeps
 * its last good connection.
 */
import { createHash } from 'node:crypto';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { fromKubeConfig, type Cluster, type KubeObject, type RequestObserver } from '../kube/client.js';
import { Informer, type InformerObserver, type ReadinessCheck } from '../kube/informer.js';
import { REMOTE_NAME_PATTERN } from '../policy/tenant.js';
import { parseDuration } from '../util/duration.js';
import type { RemoteMode } from './remote.js';
import { parseRemoteKubeconfig } from './kubeconfig.js';
import type { RemoteProvider, RemoteSink } from './provider.js';

export const ANNOTATION_REMOTE_NAME = 'internal-services.appstudio.redhat.com/remote-name';
export const ANNOTATION_REMOTE_MODE = 'internal-services.appstudio.redhat.com/remote-mode';
export const ANNOTATION_POLL_INTERVAL = 'internal-services.appstudio.redhat.com/poll-interval';
export const KUBECONFIG_KEY = 'kubeconfig';

interface Secret extends KubeObject {
  data?: Record<string, string>;
  type?: string;
}

export type { RemoteSink } from './provider.js';

export interface RemoteSecretsOptions {
  internal: Cluster;
  /** Namespace of the Secrets. */
  namespace: string;
  /** Label selector of the Secrets. */
  selector?: string | undefined;
  /** Or: these Secrets by name. */
  names?: string[] | undefined;
  /** Remote names not to take (e.g. the --remote-kubeconfig remote's). */
  reserved?: ReadonlySet<string>;
  /** Mode of a remote whose Secret does not say. */
  defaultMode: RemoteMode;
  log: Logger;
  resyncPeriodMs?: number;
  informerObserver?: InformerObserver | undefined;
  apiObserver?: RequestObserver | undefined;
  informer?: { watchTimeoutSeconds?: number; backoffMaxMs?: number };
}

/** What a usable Secret asks for. */
export interface RemoteFromSecret {
  name: string;
  kubeconfig: KubeConfig;
  mode: RemoteMode;
  /** Changes when anything that matters changes. */
  fingerprint: string;
}

/** Reads one Secret: a remote to serve, or why it cannot be used. Pure but for kubeconfig parsing. */
export function readRemoteSecret(secret: Secret, defaultMode: RemoteMode): { ok: true; remote: RemoteFromSecret } | { ok: false; error: string } {
  const md = secret.metadata ?? {};
  const where = `Secret ${md.namespace}/${md.name}`;
  const name = md.annotations?.[ANNOTATION_REMOTE_NAME] || md.name || '';
  if (!REMOTE_NAME_PATTERN.test(name)) {
    return { ok: false, error: `${where}: remote name ${JSON.stringify(name)} is not a DNS label (lower-case letters, digits and "-", at most 63); set the annotation ${ANNOTATION_REMOTE_NAME}` };
  }
  const raw = secret.data?.[KUBECONFIG_KEY];
  if (!raw) return { ok: false, error: `${where}: no data.${KUBECONFIG_KEY} (the remote cluster's kubeconfig)` };
  const text = Buffer.from(raw, 'base64').toString('utf8');
  const parsed = parseRemoteKubeconfig(text, `${where}: data.${KUBECONFIG_KEY}`);
  if (!parsed.ok) return parsed;
  const kc = parsed.kubeconfig;
  const modeText = md.annotations?.[ANNOTATION_REMOTE_MODE];
  if (modeText !== undefined && modeText !== 'watch' && modeText !== 'poll') return { ok: false, error: `${where}: annotation ${ANNOTATION_REMOTE_MODE} must be watch or poll, not ${JSON.stringify(modeText)}` };
  const intervalText = md.annotations?.[ANNOTATION_POLL_INTERVAL];
  const interval = intervalText === undefined ? undefined : parseDuration(intervalText);
  if (intervalText !== undefined && (interval === undefined || interval < 1000)) return { ok: false, error: `${where}: annotation ${ANNOTATION_POLL_INTERVAL} must be a duration of at least 1s, like 30s, not ${JSON.stringify(intervalText)}` };
  const mode: RemoteMode = {
    mode: (modeText as 'watch' | 'poll' | undefined) ?? defaultMode.mode,
    ...((interval ?? defaultMode.pollIntervalMs) !== undefined ? { pollIntervalMs: (interval ?? defaultMode.pollIntervalMs)! } : {}),
  };
  const fingerprint = createHash('sha256').update(JSON.stringify([name, text, mode])).digest('hex');
  return { ok: true, remote: { name, kubeconfig: kc, mode, fingerprint } };
}

export class RemoteSecrets implements RemoteProvider {
  private readonly informers: Informer<Secret>[] = [];
  /** Secret key (namespace/name) -> what it asks for, or its problem. */
  private readonly secrets = new Map<string, { ok: true; remote: RemoteFromSecret } | { ok: false; error: string }>();
  /** Remote name -> the Secret that serves it and what it serves. */
  private readonly serving = new Map<string, { secret: string; fingerprint: string }>();
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly sink: RemoteSink,
    private readonly opts: RemoteSecretsOptions,
  ) {
    const handlers = {
      onAdd: (s: Secret) => this.changed(s),
      onUpdate: (_o: Secret, s: Secret) => this.changed(s),
      onDelete: (s: Secret) => this.changed(s, true),
    };
    const inf = { namespace: opts.namespace, resyncPeriodMs: opts.resyncPeriodMs ?? 10 * 60_000, observer: opts.informerObserver, ...opts.informer };
    const client = opts.internal.resource<Secret>({ group: '', version: 'v1', plural: 'secrets' });
    if (opts.selector) this.informers.push(new Informer<Secret>(`internal/secrets(${opts.selector})`, client, handlers, opts.log, { ...inf, labelSelector: opts.selector }));
    for (const n of opts.names ?? []) this.informers.push(new Informer<Secret>(`internal/secrets/${n}`, client, handlers, opts.log, { ...inf, fieldSelector: `metadata.name=${n}` }));
  }

  /** Starts following the Secrets; resolves once each source has been listed and what it found is served. */
  async start(): Promise<void> {
    for (const i of this.informers) i.start();
    await Promise.all(this.informers.map((i) => i.waitForSync()));
    await this.settled();
  }

  /** Resolves when every Secret change seen so far has been applied. */
  async settled(): Promise<void> {
    let last: Promise<void>;
    do {
      last = this.chain;
      await last;
    } while (last !== this.chain);
  }

  async stop(): Promise<void> {
    await Promise.all(this.informers.map((i) => i.stop()));
    await this.settled();
  }

  /** /readyz: the Secret sources (required), and each Secret that cannot be used (reported). */
  readiness(): ReadinessCheck[] {
    const out = this.informers.map((i) => i.readiness(true));
    for (const [key, s] of this.secrets) {
      const serving = s.ok && this.serving.get(s.remote.name)?.secret === key;
      const detail = !s.ok ? s.error : serving ? undefined : `remote ${JSON.stringify(s.remote.name)} is served from another Secret (${this.serving.get(s.remote.name)?.secret ?? 'the --remote-kubeconfig flag'}); this one is not used`;
      out.push({ name: `secret/${key}`, ok: detail === undefined, required: false, ...(detail ? { detail } : {}) });
    }
    return out;
  }

  private changed(s: Secret, deleted = false): void {
    const key = `${s.metadata?.namespace ?? ''}/${s.metadata?.name ?? ''}`;
    const read = deleted ? undefined : readRemoteSecret(s, this.opts.defaultMode);
    this.chain = this.chain.then(() => this.apply(key, read)).catch((e: unknown) => this.opts.log.error({ secret: key, err: String(e) }, 'remote Secret not applied'));
  }

  /** Brings what is served in line with the Secrets, one change at a time. */
  private async apply(key: string, read: ReturnType<typeof readRemoteSecret> | undefined): Promise<void> {
    const before = this.secrets.get(key);
    if (read === undefined) this.secrets.delete(key);
    else this.secrets.set(key, read);
    if (read && !read.ok && !(before && !before.ok && before.error === read.error)) {
      this.opts.log.error({ secret: key, problem: read.error }, 'remote Secret cannot be used; a remote already served from it keeps its connection');
    }
    // Which remote names are concerned: the one this Secret named before and the one it names now.
    const names = new Set<string>();
    if (before?.ok) names.add(before.remote.name);
    if (read?.ok) names.add(read.remote.name);
    for (const [name, s] of this.serving) if (s.secret === key) names.add(name);
    for (const name of names) await this.reconcileRemote(name);
  }

  /** The Secret that should serve a remote name: the first by namespace/name among the usable ones naming it. */
  private chosen(name: string): { key: string; remote: RemoteFromSecret } | undefined {
    const candidates = [...this.secrets.entries()].filter((e): e is [string, { ok: true; remote: RemoteFromSecret }] => e[1].ok && e[1].remote.name === name).sort((a, b) => (a[0] < b[0] ? -1 : 1));
    const first = candidates[0];
    return first ? { key: first[0], remote: first[1].remote } : undefined;
  }

  private async reconcileRemote(name: string): Promise<void> {
    const current = this.serving.get(name);
    if (this.opts.reserved?.has(name)) {
      const c = this.chosen(name);
      if (c) this.opts.log.error({ secret: c.key, remote: name }, 'remote name is taken by --remote-kubeconfig (--remote-name); the Secret is not used: name it otherwise (annotation internal-services.appstudio.redhat.com/remote-name)');
      return;
    }
    const want = this.chosen(name);
    if (!want) {
      // No usable Secret names it. If the one that served it still exists but
      // is broken now, the remote keeps its last good connection.
      const stillThere = current && this.secrets.has(current.secret);
      if (current && !stillThere) {
        this.serving.delete(name);
        await this.sink.removeRemote(name);
      }
      return;
    }
    if (current && current.secret === want.key && current.fingerprint === want.remote.fingerprint) return;
    const cluster = await fromKubeConfig('remote', want.remote.kubeconfig, { observer: this.opts.apiObserver, remote: name });
    this.serving.set(name, { secret: want.key, fingerprint: want.remote.fingerprint });
    this.sink.addRemote({ name, cluster, mode: want.remote.mode, origin: `Secret ${want.key}` });
  }
}
