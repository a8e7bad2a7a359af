/**
 * Connections to one cluster, built on @kubernetes/client-node.
 *
 * Two things are added to the library's defaults:
 * - one keep-alive HTTPS agent per cluster (the library makes a new agent, and
 *   so a new TLS handshake, for every request);
 * - a timeout on every non-watch request, so a half-open connection can never
 *   hold a worker forever.
 */
import https from 'node:https';
import {
  ApiException,
  ApisApi,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  ServerConfiguration,
  createConfiguration,
  type RequestContext,
  type ResponseContext,
} from '@kubernetes/client-node';
import { ConfigError } from '../errors.js';
import { openWatch, type WatchParams } from './watch.js';

export type ClusterName = 'remote' | 'internal';

export interface RequestObserver {
  (cluster: ClusterName, method: string, url: string, code: number | 'error', seconds: number, remote?: string): void;
}

export interface ClusterOptions {
  /** Timeout of each non-watch request. */
  requestTimeoutMs?: number;
  /** For a remote cluster: its name (metrics label). */
  remote?: string;
  observer?: RequestObserver;
}

export class Cluster {
  readonly custom: CustomObjectsApi;
  readonly core: CoreV1Api;
  readonly coordination: CoordinationV1Api;
  /** API discovery: the groups and their versions (CustomObjectsApi.getAPIResources lists one group version's resources). */
  readonly apis: ApisApi;
  readonly server: string;
  /** Sees every request's outcome; watches report themselves here when they end. */
  readonly observer: RequestObserver | undefined;
  /** For a remote cluster: its name. */
  readonly remote: string | undefined;

  constructor(
    readonly name: ClusterName,
    readonly kc: KubeConfig,
    private readonly agent: https.Agent | undefined,
    opts: ClusterOptions = {},
  ) {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new ConfigError('CONFIG_KUBECONFIG', `${name} kubeconfig has no current cluster`);
    this.server = cluster.server;
    const timeoutMs = opts.requestTimeoutMs ?? 30_000;
    const observer = opts.observer;
    this.observer = observer;
    this.remote = opts.remote;
    const started = new WeakMap<RequestContext, number>();
    const sharedAgent = this.agent;
    const config = createConfiguration({
      baseServer: new ServerConfiguration(cluster.server, {}),
      authMethods: { default: kc },
      promiseMiddleware: [
        {
          pre: async (ctx: RequestContext) => {
            if (sharedAgent) ctx.setAgent(sharedAgent);
            if (!ctx.getSignal()) ctx.setSignal(AbortSignal.timeout(timeoutMs));
            if (observer) started.set(ctx, performance.now());
            return ctx;
          },
          post: async (res: ResponseContext) => res,
        },
      ],
    });
    // Response codes are observed by wrapping the HTTP library, which sees both
    // the request and its outcome.
    if (observer) {
      (config as { httpApi: typeof config.httpApi }).httpApi = observedHttp(config.httpApi, (req, code) => {
        const t0 = started.get(req);
        observer(name, req.getHttpMethod().toString(), req.getUrl(), code, t0 === undefined ? 0 : (performance.now() - t0) / 1000, opts.remote);
      });
    }
    this.custom = new CustomObjectsApi(config);
    this.core = new CoreV1Api(config);
    this.coordination = new CoordinationV1Api(config);
    this.apis = new ApisApi(config);
    // Watches hold their connection for minutes: their own pool, so they
    // never take the sockets that requests queue for.
    this.watchAgent = agent ? new https.Agent({ ...agent.options, keepAlive: true, maxSockets: Infinity }) : undefined;
  }

  private watchAgent: https.Agent | undefined;

  /** Opens a watch of path (src/kube/watch.ts): events in order, then onDone exactly once. */
  watch(path: string, params: WatchParams, onEvent: (type: string, obj: never) => void, onDone: (err?: unknown) => void): Promise<AbortController> {
    return openWatch(this.kc, this.server, this.watchAgent, path, params, onEvent, onDone);
  }

  resource<T extends KubeObject = KubeObject>(ref: ResourceRef): ResourceClient<T> {
    return new ResourceClient<T>(this, ref);
  }

  /**
   * A connection to another URL of the same server with the same
   * credentials (kcp: one logical cluster behind a virtual workspace),
   * sharing this one's keep-alive connections; closing it leaves them open.
   */
  sibling(kc: KubeConfig, opts: ClusterOptions = {}): Cluster {
    const c = new Cluster(this.name, kc, this.agent, { ...(this.observer ? { observer: this.observer } : {}), ...(this.remote ? { remote: this.remote } : {}), ...opts });
    c.ownsAgent = false;
    c.watchAgent?.destroy();
    c.watchAgent = this.watchAgent;
    return c;
  }

  private ownsAgent = true;

  close(): void {
    if (!this.ownsAgent) return;
    this.agent?.destroy();
    this.watchAgent?.destroy();
  }
}

function observedHttp(http: ReturnType<typeof createConfiguration>['httpApi'], record: (req: RequestContext, code: number | 'error') => void) {
  return {
    send(req: RequestContext) {
      const obs = http.send(req);
      const promise = obs.toPromise().then(
        (res) => {
          record(req, res.httpStatusCode);
          return res;
        },
        (err: unknown) => {
          record(req, 'error');
          throw err;
        },
      );
      return fromPromise(promise, obs);
    },
  } as typeof http;
}

// The generated client's Observable is a thin stub around a promise; build one
// of the same class from our promise.
function fromPromise<T>(promise: Promise<T>, like: object) {
  const Ctor = like.constructor as new (p: Promise<T>) => unknown;
  return new Ctor(promise);
}

/** Loads a kubeconfig file (or in-cluster config when path is undefined and allowed). */
export async function connect(name: ClusterName, source: { kubeconfig?: string; inCluster?: boolean }, opts: ClusterOptions = {}): Promise<Cluster> {
  const kc = new KubeConfig();
  try {
    if (source.kubeconfig) kc.loadFromFile(source.kubeconfig);
    else if (source.inCluster) kc.loadFromCluster();
    else kc.loadFromDefault();
  } catch (e) {
    throw new ConfigError('CONFIG_KUBECONFIG', `cannot read the ${name} kubeconfig ${source.kubeconfig ?? ''}: ${(e as Error).message}`.replace('  ', ' '));
  }
  if (!kc.getCurrentCluster()) {
    throw new ConfigError('CONFIG_KUBECONFIG', `the ${name} kubeconfig ${source.kubeconfig ?? ''} names no current context/cluster`.replace('  ', ' '));
  }
  const agent = await keepAliveAgent(kc);
  return new Cluster(name, kc, agent, opts);
}

export async function fromKubeConfig(name: ClusterName, kc: KubeConfig, opts: ClusterOptions = {}): Promise<Cluster> {
  return new Cluster(name, kc, await keepAliveAgent(kc), opts);
}

async function keepAliveAgent(kc: KubeConfig): Promise<https.Agent | undefined> {
  const cluster = kc.getCurrentCluster();
  if (!cluster || !cluster.server.startsWith('https:') || cluster.proxyUrl) return undefined;
  const o: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(o);
  return new https.Agent({
    keepAlive: true,
    maxSockets: 32,
    ca: o.ca,
    cert: o.cert,
    key: o.key,
    pfx: o.pfx,
    passphrase: o.passphrase,
    ...(cluster.skipTLSVerify ? { rejectUnauthorized: false } : {}),
    ...(cluster.tlsServerName ? { servername: cluster.tlsServerName } : {}),
  });
}

export interface ResourceRef {
  group: string;
  version: string;
  plural: string;
}

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    deletionTimestamp?: string;
    creationTimestamp?: string;
  };
}

export interface ListResult<T> {
  items: T[];
  resourceVersion: string;
}

/** Typed access to one custom resource on one cluster. */
export class ResourceClient<T extends KubeObject = KubeObject> {
  constructor(
    readonly cluster: Cluster,
    readonly ref: ResourceRef,
  ) {}

  /** Path for watches; namespace undefined means all namespaces. */
  path(namespace?: string): string {
    const { group, version, plural } = this.ref;
    if (group === '') return namespace ? `/api/${version}/namespaces/${namespace}/${plural}` : `/api/${version}/${plural}`;
    return namespace ? `/apis/${group}/${version}/namespaces/${namespace}/${plural}` : `/apis/${group}/${version}/${plural}`;
  }

  /**
   * Lists all pages (500 a page) and returns the list's resourceVersion.
   * `transform` is applied page by page, so a large list never holds all its
   * objects at full size at once. With `each`, every object goes there as its
   * page arrives and none is kept (items is empty).
   */
  async list(namespace: string | undefined, opts: { labelSelector?: string; fieldSelector?: string; transform?: (obj: T) => T; each?: (obj: T) => void } = {}): Promise<ListResult<T>> {
    const items: T[] = [];
    let cont: string | undefined;
    let rv = '';
    do {
      const base = { ...this.ref, limit: 500, _continue: cont, labelSelector: opts.labelSelector, fieldSelector: opts.fieldSelector };
      const page = (this.ref.group === ''
        ? await this.listCore(namespace, base)
        : namespace
        ? await this.cluster.custom.listNamespacedCustomObject({ ...base, namespace })
        : await this.cluster.custom.listClusterCustomObject(base)) as { items?: T[]; metadata?: { resourceVersion?: string; continue?: string } };
      for (const item of page.items ?? []) {
        const obj = opts.transform ? opts.transform(item) : item;
        if (opts.each) opts.each(obj);
        else items.push(obj);
      }
      rv = page.metadata?.resourceVersion ?? rv;
      cont = page.metadata?.continue || undefined;
    } while (cont);
    return { items, resourceVersion: rv };
  }

  /** The core group has one typed call per kind; only Secrets are read through here. */
  private async listCore(namespace: string | undefined, base: { limit: number; _continue: string | undefined; labelSelector: string | undefined; fieldSelector: string | undefined }): Promise<unknown> {
    if (this.ref.plural !== 'secrets' || !namespace) throw new Error(`core resource ${this.ref.plural} is not supported here`);
    const { limit, _continue, labelSelector, fieldSelector } = base;
    return this.cluster.core.listNamespacedSecret({ namespace, limit, _continue, labelSelector, fieldSelector });
  }

  async get(namespace: string, name: string): Promise<T> {
    return (await this.cluster.custom.getNamespacedCustomObject({ ...this.ref, namespace, name })) as T;
  }

  /** Returns undefined on 404. */
  async tryGet(namespace: string, name: string): Promise<T | undefined> {
    try {
      return await this.get(namespace, name);
    } catch (e) {
      if (statusCode(e) === 404) return undefined;
      throw e;
    }
  }

  async create(namespace: string, body: T): Promise<T> {
    return (await this.cluster.custom.createNamespacedCustomObject({ ...this.ref, namespace, body })) as T;
  }

  /** PUT on the status subresource; the body's resourceVersion makes it conditional. */
  async replaceStatus(namespace: string, name: string, body: T): Promise<T> {
    return (await this.cluster.custom.replaceNamespacedCustomObjectStatus({ ...this.ref, namespace, name, body })) as T;
  }

  async replace(namespace: string, name: string, body: T): Promise<T> {
    return (await this.cluster.custom.replaceNamespacedCustomObject({ ...this.ref, namespace, name, body })) as T;
  }

  /** JSON merge patch of the status subresource (`patch` is {status: {…}}). */
  async patchStatusMerge(namespace: string, name: string, patch: object): Promise<T> {
    return (await this.cluster.custom.patchNamespacedCustomObjectStatus(
      { ...this.ref, namespace, name, body: patch },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )) as T;
  }

  /** JSON merge patch of the object (not its status). */
  async patchMerge(namespace: string, name: string, patch: object): Promise<T> {
    return (await this.cluster.custom.patchNamespacedCustomObject(
      { ...this.ref, namespace, name, body: patch },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    )) as T;
  }

  /**
   * JSON patch (RFC 6902) of the object: with `test` operations, applied only
   * if the object still holds what they test (the apiserver refuses the whole
   * patch otherwise, 422).
   */
  async patchJson(namespace: string, name: string, ops: JsonPatchOp[]): Promise<T> {
    return (await this.cluster.custom.patchNamespacedCustomObject(
      { ...this.ref, namespace, name, body: ops },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    )) as T;
  }

  /**
   * Deletes; 404 counts as done. With uid, only that incarnation of the name
   * is deleted; with resourceVersion, only that version of it (409 otherwise).
   */
  async delete(namespace: string, name: string, uid?: string, resourceVersion?: string): Promise<void> {
    const preconditions = { ...(uid ? { uid } : {}), ...(resourceVersion ? { resourceVersion } : {}) };
    try {
      await this.cluster.custom.deleteNamespacedCustomObject({
        ...this.ref,
        namespace,
        name,
        propagationPolicy: 'Background',
        body: uid || resourceVersion ? { preconditions } : {},
      });
    } catch (e) {
      if (statusCode(e) === 404) return;
      throw e;
    }
  }
}

/** One operation of a JSON patch (RFC 6902), as far as the controller uses them. */
export type JsonPatchOp = { op: 'test'; path: string; value: unknown } | { op: 'remove'; path: string };

/** HTTP status of an API error, undefined for network-level failures. */
export function statusCode(e: unknown): number | undefined {
  if (e instanceof ApiException) return e.code;
  const c = (e as { code?: unknown; statusCode?: unknown } | null)?.statusCode ?? (e as { code?: unknown } | null)?.code;
  return typeof c === 'number' ? c : undefined;
}

/**
 * True when the API server refuses an object for what it is, so that sending
 * it again can never succeed: invalid (400, 422), too large (413, or etcd's
 * "request is too large", which reaches clients as a 500).
 */
export function isRefusedObject(e: unknown): boolean {
  const code = statusCode(e);
  return code === 400 || code === 413 || code === 422 || (code === 500 && /too large/i.test(describeError(e)));
}

/** A readable one-line description of an API or network error. */
export function describeError(e: unknown): string {
  if (e instanceof ApiException) {
    let msg = '';
    try {
      const body = typeof e.body === 'string' ? JSON.parse(e.body) : e.body;
      msg = (body as { message?: string })?.message ?? '';
    } catch {
      msg = String(e.body).slice(0, 300);
    }
    return `HTTP ${e.code}${msg ? `: ${msg}` : ''}`;
  }
  if (e instanceof Error) return e.message;
  return String(e);
}
