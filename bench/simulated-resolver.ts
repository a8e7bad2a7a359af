/**
 * A SIMULATED cluster resolver for the benchmark's simulated executor: with
 * no Tekton running, nothing answers the ResolutionRequests this controller
 * makes for requests that name their Pipeline through the cluster resolver
 * (`--request-shape pipeline`, the shape both controllers of
 * `--against-incumbent` run). This answers them as Tekton's cluster
 * resolver does, from the Pipelines on the internal cluster: the object as
 * JSON (its apiVersion, kind, name, namespace, labels, annotations and
 * spec), a source `/apis/tekton.dev/v1/namespaces/<ns>/pipeline/<name>@<uid>`
 * with the data's sha256, `Succeeded` True; a missing Pipeline or a kind
 * other than `pipeline` fails the request with the reason Tekton gives.
 * Used only where speed is the point; real Tekton's resolver answers them
 * with `--tekton real`.
 */
import { createHash } from 'node:crypto';
import { CustomObjectsApi, PatchStrategy, setHeaderOptions, Watch, type KubeConfig } from '@kubernetes/client-node';
import type { ResolutionRequest } from '../src/tekton/resolve.js';

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const RR = { group: 'resolution.tekton.dev', version: 'v1beta1', plural: 'resolutionrequests' } as const;

interface PipelineObject {
  metadata?: { name?: string; namespace?: string; uid?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: unknown;
}

export class SimulatedClusterResolver {
  private abort: (() => void) | undefined;
  private readonly done = new Set<string>();
  answered = 0;

  constructor(private readonly kc: KubeConfig, private readonly namespace: string, private readonly log: (m: string) => void) {}

  async start(): Promise<void> {
    const w = await new Watch(this.kc).watch(`/apis/${RR.group}/${RR.version}/namespaces/${this.namespace}/resolutionrequests`, { labelSelector: 'resolution.tekton.dev/type=cluster' }, (type: string, rr: ResolutionRequest) => {
      if ((type === 'ADDED' || type === 'MODIFIED') && !rr.status?.conditions?.length) void this.answer(rr);
    }, (err: unknown) => {
      if (err && this.abort) this.log(`simulated cluster resolver: watch ended: ${String(err)}`);
    });
    this.abort = () => w.abort();
  }

  async stop(): Promise<void> {
    const a = this.abort;
    this.abort = undefined;
    a?.();
  }

  private async answer(rr: ResolutionRequest): Promise<void> {
    const name = rr.metadata?.name ?? '';
    if (this.done.has(name)) return;
    this.done.add(name);
    const p = Object.fromEntries((rr.spec?.params ?? []).map((x) => [x.name, String(x.value)]));
    const api = this.kc.makeApiClient(CustomObjectsApi);
    let status: NonNullable<ResolutionRequest['status']>;
    if (p['kind'] !== 'pipeline' || !p['name'] || !p['namespace']) {
      status = { data: '', refSource: {}, source: {}, conditions: [{ type: 'Succeeded', status: 'False', reason: 'ResolutionFailed', message: `simulated cluster resolver: only kind "pipeline" with a name and a namespace is answered here (got ${JSON.stringify(p)})` }] };
    } else {
      try {
        const pl = (await api.getNamespacedCustomObject({ group: 'tekton.dev', version: 'v1', plural: 'pipelines', namespace: p['namespace'], name: p['name'] })) as PipelineObject;
        const md = pl.metadata ?? {};
        const body = JSON.stringify({ apiVersion: 'tekton.dev/v1', kind: 'Pipeline', metadata: { name: md.name, namespace: md.namespace, ...(md.labels ? { labels: md.labels } : {}), ...(md.annotations ? { annotations: md.annotations } : {}) }, spec: pl.spec });
        const data = Buffer.from(body);
        const source = { uri: `/apis/tekton.dev/v1/namespaces/${md.namespace}/pipeline/${md.name}@${md.uid}`, digest: { sha256: createHash('sha256').update(data).digest('hex') } };
        status = {
          data: data.toString('base64'),
          // v1beta1 requires both: the deprecated source and refSource (Tekton writes the same into each).
          refSource: source,
          source,
          conditions: [{ type: 'Succeeded', status: 'True', reason: '', message: '' }],
        };
      } catch (e) {
        const code = (e as { code?: number }).code;
        status = { data: '', refSource: {}, source: {}, conditions: [{ type: 'Succeeded', status: 'False', reason: 'ResolutionFailed', message: `simulated cluster resolver: pipelines.tekton.dev "${p['name']}" in ${p['namespace']}: ${code === 404 ? 'not found' : String(e)}` }] };
      }
    }
    try {
      await api.patchNamespacedCustomObjectStatus({ ...RR, namespace: this.namespace, name, body: { status } }, merge);
      this.answered++;
    } catch (e) {
      this.done.delete(name);
      this.log(`simulated cluster resolver: could not answer ${name}: ${String((e as { body?: unknown }).body ?? e).replace(/\s+/g, ' ').slice(0, 400)}`);
    }
  }
}
