/**
 * Bytes per cached object: what one finished request, one live request and
 * one PipelineRun cost in the controller's caches, measured in this process
 * the way the controller stores them. Objects are made as the apiserver
 * sends them (list pages of 500, JSON text with managedFields, params,
 * results), parsed, passed through the cache's transform and kept in a Map
 * under their cache key; the figure is the growth of the V8 heap after a
 * full GC, divided by the count. No cluster is involved: this isolates the
 * data structures from the network stack (`npm run bench -- --scale N` shows
 * the whole process).
 *
 *   node --expose-gc dist/bench/footprint.js [--count 100000]
 */
import { Command, Option } from 'commander';
import { randomUUID } from 'node:crypto';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { InternalRequest } from '../src/api/types.js';
import type { PipelineRun } from '../src/tekton/tekton-types.js';
import { slimMeta, slimRequest } from '../src/requests/cached-requests.js';

const NS = 'internal-services';
const NAMESPACES = ['team-a', 'team-b', 'team-c', 'team-d'];

function gc(): void {
  const g = (globalThis as { gc?: () => void }).gc ?? (setFlagsFromString('--expose-gc'), runInNewContext('gc') as () => void);
  g();
  g();
}

function ts(i: number): string {
  return new Date(Date.UTC(2026, 10, 1) + i * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function managedFields(manager: string, at: string, sub?: string): unknown {
  return {
    manager,
    operation: 'Update',
    apiVersion: 'appstudio.redhat.com/v1alpha1',
    time: at,
    fieldsType: 'FieldsV1',
    fieldsV1: sub ? { 'f:status': { '.': {}, 'f:conditions': {}, 'f:completionTime': {}, 'f:pipelineRun': {}, 'f:results': { '.': {}, 'f:digest': {} }, 'f:startTime': {} } } : { 'f:spec': { '.': {}, 'f:params': { '.': {}, 'f:image': {} }, 'f:request': {} } },
    ...(sub ? { subresource: sub } : {}),
  };
}

/** An InternalRequest as a list returns it: finished (Succeeded, with results) or running. */
export function requestJson(i: number, finished: boolean): unknown {
  const uid = randomUUID();
  const at = ts(i);
  const pr = `${NS}/ir-${uid}`;
  return {
    apiVersion: 'appstudio.redhat.com/v1alpha1',
    kind: 'InternalRequest',
    metadata: {
      name: `release-${String(i).padStart(7, '0')}-sign`,
      namespace: NAMESPACES[i % NAMESPACES.length],
      uid,
      resourceVersion: String(100_000 + i * 3),
      generation: 1,
      creationTimestamp: at,
      labels: { 'appstudio.openshift.io/application': 'app', 'release.appstudio.openshift.io/name': `release-${i}` },
      managedFields: [managedFields('tkn', at), managedFields('internal-services-controller', at, 'status')],
    },
    spec: { request: 'sign', params: { image: `quay.io/org/app@sha256:${i.toString(16).padStart(64, '0')}`, snapshot: `{"components":[{"name":"app","containerImage":"quay.io/org/app:${i}"}]}` } },
    status: finished
      ? {
          conditions: [{ type: 'Succeeded', status: 'True', reason: 'Succeeded', message: `PipelineRun ${pr} succeeded`, lastTransitionTime: at, observedGeneration: 1 }],
          startTime: at,
          completionTime: at,
          pipelineRun: pr,
          results: { digest: `sha256:${i.toString(16).padStart(64, '0')}`, signature: `sig-${'x'.repeat(200)}` },
          observedGeneration: 1,
        }
      : {
          conditions: [{ type: 'Succeeded', status: 'Unknown', reason: 'Running', message: `PipelineRun ${pr} is running`, lastTransitionTime: at, observedGeneration: 1 }],
          startTime: at,
          pipelineRun: pr,
          observedGeneration: 1,
        },
  };
}

/** A PipelineRun of ours as the internal cluster returns it while it runs. */
export function pipelineRunJson(i: number): unknown {
  const uid = randomUUID();
  const at = ts(i);
  return {
    apiVersion: 'tekton.dev/v1',
    kind: 'PipelineRun',
    metadata: {
      name: `ir-${uid}`,
      namespace: NS,
      uid: randomUUID(),
      resourceVersion: String(200_000 + i),
      generation: 1,
      creationTimestamp: at,
      labels: {
        'internal-services.appstudio.redhat.com/request-name': `release-${String(i).padStart(7, '0')}-sign`,
        'internal-services.appstudio.redhat.com/request-namespace': NAMESPACES[i % NAMESPACES.length],
        'internal-services.appstudio.redhat.com/request-uid': uid,
        'internal-services.appstudio.redhat.com/remote': 'default',
        'app.kubernetes.io/managed-by': 'internal-services',
        'tekton.dev/pipeline': 'sign',
      },
      annotations: { 'internal-services.appstudio.redhat.com/spec-hash': 'a'.repeat(64) },
      managedFields: [managedFields('internal-services-controller', at), managedFields('tekton-pipelines-controller', at, 'status')],
    },
    spec: {
      pipelineRef: { name: 'sign' },
      params: [
        { name: 'image', value: `quay.io/org/app@sha256:${i.toString(16).padStart(64, '0')}` },
        { name: 'snapshot', value: `{"components":[{"name":"app","containerImage":"quay.io/org/app:${i}"}]}` },
      ],
      taskRunTemplate: { serviceAccountName: 'pipeline' },
      timeouts: { pipeline: '1h0m0s' },
    },
    status: {
      conditions: [{ type: 'Succeeded', status: 'Unknown', reason: 'Running', message: 'Tasks Completed: 0 (Failed: 0, Cancelled 0), Incomplete: 1, Skipped: 0', lastTransitionTime: at }],
      startTime: at,
      childReferences: [{ apiVersion: 'tekton.dev/v1', kind: 'TaskRun', name: `ir-${uid}-sign`, pipelineTaskName: 'sign' }],
      provenance: { featureFlags: { enableAPIFields: 'beta', resultExtractionMethod: 'termination-message', maxResultSize: 4096 } },
    },
  };
}

export interface Footprint {
  what: string;
  count: number;
  /** V8 heap growth per object after a full GC, cache key and Map entry included. */
  bytesPerObject: number;
  /** Size of the object as the apiserver sent it (JSON). */
  jsonBytesPerObject: number;
}

/** Builds `count` objects page by page (500 a page, as lists arrive), transforms them and keeps them in a Map. */
export function measure<T extends { metadata?: { namespace?: string; name?: string } }>(what: string, count: number, make: (i: number) => unknown, transform: (obj: T) => T): Footprint {
  const store = new Map<string, T>();
  gc();
  const before = process.memoryUsage().heapUsed;
  let json = 0;
  for (let start = 0; start < count; start += 500) {
    const page = [];
    for (let i = start; i < Math.min(count, start + 500); i++) page.push(make(i));
    const text = JSON.stringify({ apiVersion: 'v1', kind: 'List', items: page });
    json += text.length;
    for (const item of (JSON.parse(text) as { items: T[] }).items) {
      const obj = transform(item);
      store.set(`${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`, obj);
    }
  }
  gc();
  const after = process.memoryUsage().heapUsed;
  if (store.size !== count) throw new Error(`expected ${count} objects in the store, got ${store.size}`);
  const r = { what, count, bytesPerObject: Math.round((after - before) / count), jsonBytesPerObject: Math.round(json / count) };
  store.clear();
  return r;
}

export function footprints(count: number): Footprint[] {
  const id = <T>(o: T) => o;
  return [
    measure<InternalRequest>('finished request, as listed (no transform)', count, (i) => requestJson(i, true), id),
    measure<InternalRequest>('finished request, as cached (slimRequest)', count, (i) => requestJson(i, true), slimRequest),
    measure<InternalRequest>('live request, as cached (slimRequest)', count, (i) => requestJson(i, false), slimRequest),
    measure<PipelineRun>('PipelineRun, as cached (slimMeta)', count, (i) => pipelineRunJson(i), slimMeta),
  ];
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const f = new Command('footprint')
    .description('bytes per cached object (finished request, live request, PipelineRun), measured in this process')
    .addOption(new Option('--count <n>', 'objects per measurement').default(100_000).argParser((v) => Number(v)))
    .addOption(new Option('--json', 'print JSON'))
    .parse()
    .opts<{ count: number; json?: boolean }>();
  const rows = footprints(f.count);
  if (f.json) process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
  else {
    process.stdout.write(`Bytes per cached object (V8 heap after a full GC, key and Map entry included; ${f.count} objects each; Node ${process.version})\n`);
    for (const r of rows) process.stdout.write(`  ${r.what.padEnd(46)} ${String(r.bytesPerObject).padStart(6)} B   (JSON ${r.jsonBytesPerObject} B)\n`);
  }
}
