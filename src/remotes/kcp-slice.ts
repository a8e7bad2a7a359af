/**
 * The APIExportEndpointSlice a kcp provider serves, watched (not polled):
 * one list/watch of the provider workspace's `apiexportendpointslices`
 * narrowed to the slice's name (`fieldSelector=metadata.name=…`, which the
 * role's `resourceNames` allows). Every change of the slice (kcp adding or
 * removing a shard's URL, a partition's selector changing) reaches the
 * provider at once; the cached object is what the provider reads.
 *
 * The slice's name is its own: the export's default slice has the export's
 * name, and a partitioned slice (`spec.partition`: a topology.kcp.io
 * Partition in the same workspace, selecting shards by label) any other. A
 * slice must be of the export the provider serves (`spec.export.name`):
 * another export's URLs would show other requests under the same API.
 */
import type { Logger } from 'pino';
import type { Cluster, KubeObject } from '../kube/client.js';
import { Informer, type InformerObserver, type ReadinessCheck } from '../kube/informer.js';
import { bounded } from './kcp-paths.js';

const APIEXPORTENDPOINTSLICES = { group: 'apis.kcp.io', version: 'v1alpha1', plural: 'apiexportendpointslices' } as const;

/** What is read of an APIExportEndpointSlice. */
export interface EndpointSlice extends KubeObject {
  spec?: { export?: { name?: string; path?: string }; partition?: string };
  status?: {
    endpoints?: Array<{ url?: string }>;
    shardSelector?: string;
    conditions?: Array<{ type?: string; status?: string; reason?: string; message?: string }>;
  };
}

/** The slice as the provider uses it. */
export interface SliceReading {
  /** The virtual-workspace URLs to serve (https only, no trailing slash); undefined: not known (keep what is served). */
  urls: string[] | undefined;
  /** Why the slice gives no URL to serve, or cannot be read; undefined when it lists some. */
  error: string | undefined;
  /** The partition (spec.partition) and the shard selector kcp derived from it (status.shardSelector), for logs. */
  partition?: { name: string; shardSelector: string };
}

export interface EndpointSliceWatchOptions {
  /** The slice's name. */
  name: string;
  /** The export the slice must be of. */
  exportName: string;
  log: Logger;
  /** Called after every change of the slice (and after every relist). */
  onChange: () => void;
  /** How long start() waits for the first list. */
  timeoutMs: number;
  informer?: { watchTimeoutSeconds?: number; backoffMaxMs?: number };
  observer?: InformerObserver | undefined;
}

export class EndpointSliceWatch {
  private informer: Informer<EndpointSlice> | undefined;
  private stopped = false;

  constructor(private readonly opts: EndpointSliceWatchOptions) {}

  /** Starts the watch on conn (the provider workspace) and waits, at most timeoutMs, for its first list. Never throws: read() says why nothing is known. */
  async start(conn: Cluster): Promise<void> {
    if (this.stopped || this.informer) return;
    const changed = () => {
      if (!this.stopped) this.opts.onChange();
    };
    this.informer = new Informer<EndpointSlice>(
      `kcp/endpointslice/${this.opts.name}`,
      conn.resource<EndpointSlice>(APIEXPORTENDPOINTSLICES),
      { onAdd: changed, onUpdate: changed, onDelete: changed, onResync: changed },
      this.opts.log,
      {
        fieldSelector: `metadata.name=${this.opts.name}`,
        // One small object: a plain list, then a watch from it.
        fill: 'pages',
        backoffMaxMs: this.opts.informer?.backoffMaxMs ?? 5_000,
        ...(this.opts.informer?.watchTimeoutSeconds !== undefined ? { watchTimeoutSeconds: this.opts.informer.watchTimeoutSeconds } : {}),
        ...(this.opts.observer ? { observer: this.opts.observer } : {}),
      },
    );
    this.informer.start();
    await bounded(this.informer.waitForSync(), this.opts.timeoutMs, 'no answer').catch(() => undefined);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.informer?.stop();
  }

  /** The watch as a /readyz line's detail, when it is not listing. */
  readiness(): ReadinessCheck | undefined {
    return this.informer?.readiness(false);
  }

  /** The slice as cached now. */
  read(): SliceReading {
    const name = this.opts.name;
    const informer = this.informer;
    if (!informer?.synced) {
      const why = informer?.health.lastError ?? 'not listed yet';
      return { urls: undefined, error: `cannot read APIExportEndpointSlice ${name}: ${why}` };
    }
    const slice = [...informer.list()].find((s) => s.metadata?.name === name);
    if (!slice) return { urls: [], error: `APIExportEndpointSlice ${name} does not exist in the provider workspace (the export's own slice has the export's name; a partitioned one is created with spec.export and spec.partition: docs/kcp.md)` };
    const exportOf = slice.spec?.export?.name;
    if (exportOf !== undefined && exportOf !== this.opts.exportName) {
      return {
        urls: [],
        error: `APIExportEndpointSlice ${name} is of APIExport ${exportOf}${slice.spec?.export?.path ? ` (${slice.spec.export.path})` : ''}, not ${this.opts.exportName}: nothing of it is served (give the slice of ${this.opts.exportName}, or --kcp-export ${exportOf})`,
      };
    }
    const partition = slice.spec?.partition ? { name: slice.spec.partition, shardSelector: slice.status?.shardSelector ?? '' } : undefined;
    const endpoints = slice.status?.endpoints ?? [];
    const urls = [...new Set(endpoints.map((e) => e.url?.replace(/\/+$/, '')).filter((u): u is string => !!u && isHttps(u)))];
    const refused = endpoints.filter((e) => e.url && !isHttps(e.url.replace(/\/+$/, '')));
    if (refused.length) this.opts.log.warn({ slice: name, refused: refused.map((e) => e.url) }, 'kcp: endpoint slice URLs that are not https URLs; ignored');
    if (urls.length) return { urls, error: undefined, ...(partition ? { partition } : {}) };
    // kcp empties a slice whose Partition cannot be found: say so.
    const failing = (slice.status?.conditions ?? []).filter((c) => c.status === 'False');
    const because = failing.length ? `: ${failing.map((c) => `${c.type} ${c.reason ?? ''}${c.message ? ` (${c.message})` : ''}`.trim()).join('; ')}` : partition ? ` (its partition ${partition.name} selects shards ${partition.shardSelector || '(none yet)'}; kcp lists a shard once a workspace on it binds the export)` : ' (no workspace binds the export yet?)';
    return { urls: [], error: `APIExportEndpointSlice ${name} lists no endpoint${because}`, ...(partition ? { partition } : {}) };
  }
}

export function isHttps(url: string): boolean {
  try {
    return new URL(url).protocol === 'https:';
  } catch {
    return false;
  }
}

