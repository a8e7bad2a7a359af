/** Building PipelineRuns for requests, and reading their outcome. */
import { createHash } from 'node:crypto';
import type { InternalRequest, InternalRequestStatus } from '../api/types.js';
import type { Provenance, RemoteRef } from './graph-model.js';
import { resolutionRequest, type ResolutionRequest } from './resolve.js';
import type { ParamValue, Pipeline, PipelineRun } from './tekton-types.js';
import { DEFAULT_REMOTE } from '../policy/tenant.js';
import { requestKey } from '../api/request-key.js';
import { parseDuration } from '../util/duration.js';

/** Labels and annotations that tie a PipelineRun to its request. */
export const LABEL_MANAGED_BY = 'app.kubernetes.io/managed-by';
export const MANAGED_BY = 'internal-services';
export const LABEL_REQUEST_UID = 'internal-services.appstudio.redhat.com/request-uid';
export const LABEL_REQUEST_NAMESPACE = 'internal-services.appstudio.redhat.com/request-namespace';
/** The remote cluster the request is on (objects made before there were several remotes lack it: DEFAULT_REMOTE). */
export const LABEL_REQUEST_REMOTE = 'internal-services.appstudio.redhat.com/remote';
/** Request names may be 253 characters, more than a label value holds: the name goes in an annotation. */
export const ANNOTATION_REQUEST_NAME = 'internal-services.appstudio.redhat.com/request-name';
export const ANNOTATION_REQUEST_NAMESPACE = 'internal-services.appstudio.redhat.com/request-namespace';
/** The kcp workspace path of the request's remote (its remote label is the workspace's logical cluster). */
export const ANNOTATION_WORKSPACE = 'internal-services.appstudio.redhat.com/workspace';
/** The request's kind, on what was made for a request of a kind other than InternalRequest (absent: InternalRequest). */
export const ANNOTATION_REQUEST_KIND = 'internal-services.appstudio.redhat.com/request-kind';
/** What was resolved from where and pinned to what (JSON list of Provenance), on PipelineRuns that run a checked graph. */
export const ANNOTATION_SOURCES = 'internal-services.appstudio.redhat.com/sources';
/** A request's idempotency key (see requests/idempotency.ts), also on its PipelineRun. */
export const LABEL_IDEMPOTENCY_KEY = 'internal-services.appstudio.redhat.com/idempotency-key';
/** "cancel": the rule that granted the request wants the run stopped if the configuration stops granting it. */
export const ANNOTATION_ON_REVOKE = 'internal-services.appstudio.redhat.com/on-revoke';
/** Why the run was cancelled when the configuration stopped granting it. */
export const ANNOTATION_REVOKED = 'internal-services.appstudio.redhat.com/revoked';
/** Selects every PipelineRun (and ResolutionRequest) this controller made. */
export const OWNED_SELECTOR = `${LABEL_MANAGED_BY}=${MANAGED_BY},${LABEL_REQUEST_UID}`;

/**
 * The one name a request's PipelineRun can have. Derived from the request's
 * uid, so the API server itself refuses a second one (AlreadyExists), whatever
 * a cache says, and a deleted-then-recreated request gets a new PipelineRun.
 */
export function pipelineRunName(requestUid: string): string {
  return `ir-${requestUid.toLowerCase()}`;
}

/** The request key (see api/request-key.ts) an object we made belongs to, from its labels and annotations. */
export function requestKeyOf(pr: Pick<PipelineRun, 'metadata'>): string | undefined {
  const a = pr.metadata.annotations ?? {};
  const ns = a[ANNOTATION_REQUEST_NAMESPACE];
  const name = a[ANNOTATION_REQUEST_NAME];
  return ns && name ? requestKey({ remote: remoteOf(pr), namespace: ns, name, kind: a[ANNOTATION_REQUEST_KIND] }) : undefined;
}

/** The remote an object we made is for. */
export function remoteOf(obj: { metadata?: { labels?: Record<string, string> } }): string {
  return obj.metadata?.labels?.[LABEL_REQUEST_REMOTE] || DEFAULT_REMOTE;
}

export function requestUidOf(obj: { metadata?: { labels?: Record<string, string> } }): string | undefined {
  return obj.metadata?.labels?.[LABEL_REQUEST_UID];
}

/**
 * The ResolutionRequest for one reference of one request: its name is derived
 * from the request's uid and the reference, so each is made once whatever
 * retries and restarts happen, and a request's are found by label.
 */
/** What ties an object the controller makes for a request (PipelineRun, ResolutionRequest, approval) to it: found by label, mapped back by annotation. */
export function ownedBy(req: InternalRequest, remote: string = DEFAULT_REMOTE, kind?: string): { labels: Record<string, string>; annotations: Record<string, string> } {
  const ns = req.metadata.namespace ?? '';
  return {
    labels: { [LABEL_MANAGED_BY]: MANAGED_BY, [LABEL_REQUEST_UID]: req.metadata.uid ?? '', [LABEL_REQUEST_NAMESPACE]: ns, [LABEL_REQUEST_REMOTE]: remote },
    annotations: { [ANNOTATION_REQUEST_NAMESPACE]: ns, [ANNOTATION_REQUEST_NAME]: req.metadata.name ?? '', ...(kind ? { [ANNOTATION_REQUEST_KIND]: kind } : {}) },
  };
}

/** `kind`: the request's kind when it is not InternalRequest (see api/request-key.ts). */
export function resolutionFor(req: InternalRequest, ref: RemoteRef, namespace: string, remote: string = DEFAULT_REMOTE, kind?: string): ResolutionRequest {
  const uid = req.metadata.uid ?? '';
  const hash = createHash('sha256').update(JSON.stringify([ref.resolver, ref.params.map((p) => [p.name, p.value])])).digest('hex').slice(0, 12);
  const owner = ownedBy(req, remote, kind);
  const rr = resolutionRequest(namespace, `${pipelineRunName(uid)}-${hash}`, ref.resolver, ref.params, owner.labels);
  rr.metadata!.annotations = { ...owner.annotations, ...(ref.forRef ? { [ANNOTATION_GIT_REF]: ref.forRef } : {}) };
  return rr;
}

/** On a ResolutionRequest of a git reference asked for by branch or tag: that exact ref (its revision param is the ref's commit when it was looked up). */
export const ANNOTATION_GIT_REF = 'internal-services.dev/git-ref';

/** The request's status.pipeline, from what the PipelineRun records (undefined: an installed Pipeline, nothing resolved). */
export function pipelineStatusOf(pr: Pick<PipelineRun, 'metadata'>): InternalRequestStatus['pipeline'] | undefined {
  const raw = pr.metadata.annotations?.[ANNOTATION_SOURCES];
  if (!raw) return undefined;
  let list: unknown;
  try {
    list = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (!Array.isArray(list) || list.length === 0) return undefined;
  const fields = (p: Provenance) => ({
    resolver: p.resolver,
    source: p.source,
    ...(p.path ? { path: p.path } : {}),
    ...(p.revision ? { revision: p.revision } : {}),
    ...(p.digest ? { digest: p.digest } : {}),
    ...(p.reachableFrom ? { reachableFrom: p.reachableFrom } : {}),
    ...(p.signedBy ? { signedBy: p.signedBy } : {}),
  });
  const all = list as Provenance[];
  const top = all.find((p) => p.ref === 'spec.pipeline.pipelineRef');
  const refs = all.filter((p) => p !== top).slice(0, 256);
  return { ...(top ? fields(top) : {}), ...(refs.length ? { references: refs.map((p) => ({ ref: p.ref, ...fields(p) })) } : {}) };
}

/** What runs, already checked: the installed Pipeline and how the request asks to run it. */
export interface RunSpec {
  pipeline: string;
  timeouts?: { pipeline?: string; tasks?: string; finally?: string } | undefined;
  serviceAccount?: string | undefined;
  /** The workspace is an emptyDir instead of a fresh volume claim. */
  emptyDirWorkspace?: boolean;
}

export interface BuildOptions {
  namespace: string;
  volumeClaim: { name: string; size: string };
  /** Params already converted to the Pipeline's declared types. */
  params: Array<{ name: string; value: ParamValue }>;
  /** The checked (and pinned) Pipeline spec to run embedded, instead of the installed Pipeline by name. */
  pipelineSpec?: Record<string, unknown>;
  /** What was resolved from where (recorded on the PipelineRun). */
  provenance?: Provenance[];
  annotations?: Record<string, string>;
  /** The remote cluster of the request (default DEFAULT_REMOTE). */
  remote?: string;
  /** The request's kind when it is not InternalRequest. */
  kind?: string | undefined;
}

/**
 * Label keys of a request that are not copied to its PipelineRun: ours, the
 * two the incumbent Go controller marks its runs with (its runs are followed
 * by them: src/requests/incumbent.ts; the rest of its prefix is the
 * requester's, e.g. the release service's `…/pipelinerun-uid`), and those Tekton and Kubernetes give a
 * meaning to (a request must not be able to pose as another request's run,
 * or steer Tekton, through a label).
 */
/** The labels the incumbent Go controller marks its PipelineRuns with: the request's name and namespace (src/requests/incumbent.ts). */
export const INCUMBENT_LABEL_NAME = 'internal-services.appstudio.openshift.io/name';
export const INCUMBENT_LABEL_NAMESPACE = 'internal-services.appstudio.openshift.io/namespace';

export function reservedLabel(key: string): boolean {
  const slash = key.indexOf('/');
  const prefix = slash >= 0 ? key.slice(0, slash) : '';
  return (
    key === LABEL_MANAGED_BY ||
    prefix === 'internal-services.appstudio.redhat.com' ||
    key === INCUMBENT_LABEL_NAME ||
    key === INCUMBENT_LABEL_NAMESPACE ||
    [/(^|\.)tekton\.dev$/, /(^|\.)kubernetes\.io$/, /(^|\.)k8s\.io$/].some((re) => re.test(prefix))
  );
}

export function buildPipelineRun(req: InternalRequest, what: RunSpec, pipeline: Pipeline, opts: BuildOptions): PipelineRun {
  const uid = req.metadata.uid ?? '';
  const owner = ownedBy(req, opts.remote, opts.kind);
  const spec: PipelineRun['spec'] = opts.pipelineSpec ? { pipelineSpec: opts.pipelineSpec } : { pipelineRef: { name: what.pipeline } };
  if (opts.params.length) spec.params = opts.params;
  if (what.timeouts) spec.timeouts = what.timeouts;
  if (what.serviceAccount) spec.taskRunTemplate = { serviceAccountName: what.serviceAccount };
  if (pipeline.spec?.workspaces?.some((w) => w.name === opts.volumeClaim.name)) {
    spec.workspaces = [
      what.emptyDirWorkspace
        ? { name: opts.volumeClaim.name, emptyDir: {} }
        : {
            name: opts.volumeClaim.name,
            volumeClaimTemplate: {
              spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: opts.volumeClaim.size } } },
            },
          },
    ];
  }
  return {
    apiVersion: 'tekton.dev/v1',
    kind: 'PipelineRun',
    metadata: {
      name: pipelineRunName(uid),
      namespace: opts.namespace,
      labels: {
        // The request's own labels (e.g. the release that asked), so a run can be traced back to it.
        ...Object.fromEntries(Object.entries(req.metadata.labels ?? {}).filter(([k]) => !reservedLabel(k))),
        ...(req.metadata.labels?.[LABEL_IDEMPOTENCY_KEY] ? { [LABEL_IDEMPOTENCY_KEY]: req.metadata.labels[LABEL_IDEMPOTENCY_KEY] } : {}),
        ...owner.labels,
      },
      annotations: {
        ...owner.annotations,
        ...(opts.provenance?.length ? { [ANNOTATION_SOURCES]: JSON.stringify(opts.provenance) } : {}),
        ...opts.annotations,
      },
    },
    spec,
  };
}

export type RunOutcome =
  | { done: false; cancelled: boolean }
  | {
      done: true;
      succeeded: boolean;
      reason: string;
      message: string;
      startTime?: string;
      completionTime?: string;
      results: Record<string, string>;
    };

/** Reads a PipelineRun's Succeeded condition the way Tekton writes it. */
export function runOutcomeOf(pr: PipelineRun): RunOutcome {
  const c = pr.status?.conditions?.find((x) => x.type === 'Succeeded');
  if (!c || (c.status !== 'True' && c.status !== 'False')) return { done: false, cancelled: pr.spec.status === 'Cancelled' };
  return {
    done: true,
    succeeded: c.status === 'True',
    reason: c.reason ?? '',
    message: c.message ?? '',
    ...(pr.status?.startTime ? { startTime: pr.status.startTime } : {}),
    ...(pr.status?.completionTime ? { completionTime: pr.status.completionTime } : {}),
    results: convertResults(pr.status?.results),
  };
}

/** Strings as they are; arrays and objects as JSON text. */
export function convertResults(results: Array<{ name: string; value: unknown }> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const r of results ?? []) {
    if (!r || typeof r.name !== 'string') continue;
    out[r.name] = typeof r.value === 'string' ? r.value : JSON.stringify(r.value ?? null);
  }
  return out;
}

/**
 * An unfinished PipelineRun running more than `graceMs` past its own
 * `timeouts.pipeline`: Tekton ends a run at its timeout, so one that goes on
 * means Tekton is not acting on it. Runs without a timeout (none, or 0) never
 * are.
 */
export function pastTimeout(pr: PipelineRun, now: number, graceMs = 5 * 60_000): boolean {
  if (runOutcomeOf(pr).done) return false;
  const timeout = parseDuration(pr.spec?.timeouts?.pipeline ?? '');
  if (!timeout) return false;
  const started = Date.parse(pr.status?.startTime ?? pr.metadata.creationTimestamp ?? '');
  return Number.isFinite(started) && now - started > timeout + graceMs;
}
