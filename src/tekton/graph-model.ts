/**
 * The model of the reference graph (graph.ts): a reference to resolve
 * (`RemoteRef`), the record of where a checked reference came from and what
 * it was pinned to (`Provenance`, made by `provenanceOf` from a resolution
 * and the digest it reports, `digestOf`), what the walk over a Pipeline is
 * given (`GraphInput`), what it answers (`GraphResult`) and what following
 * one reference answers (`Followed`). Pure.
 */
import type { CommitAnswer, CommitCheck, SourcePolicy } from '../policy/source.js';
import type { RefAnswer, RefLookup } from '../policy/exact-ref.js';
import type { PathAnswer, PathCheck } from '../policy/path-check.js';
import type { Resolution } from './resolve.js';
import type { StepActionCopy } from './stepaction-copy.js';
import type { ParamValue } from './tekton-types.js';

/** A reference to resolve: a resolver and its params, with values final (substituted). */
export interface RemoteRef {
  resolver: string;
  params: Array<{ name: string; value: string }>;
  /**
   * git: the exact ref (refs/heads/…, refs/tags/…) whose commit `revision`
   * is, as looked up; recorded on the ResolutionRequest so that the request
   * keeps that commit until it is decided (a restart, an approval that takes
   * hours), whatever the branch does meanwhile.
   */
  forRef?: string;
}

/** Where a checked reference came from and what it was pinned to. */
export interface Provenance {
  /** Which reference: spec.pipeline.pipelineRef, tasks[sign].taskRef, tasks[sign].steps[0].ref, … */
  ref: string;
  resolver: string;
  /** The source as the resolver reports it, e.g. git+https://…/catalog.git. */
  source: string;
  /** The file in the source (git: pathInRepo). */
  path?: string;
  /** The ref asked for, fully qualified (refs/heads/main, refs/tags/v1), or the commit asked for. */
  revision?: string;
  /** For a commit asked for by SHA: the allowed ref it was found reachable from. */
  reachableFrom?: string;
  /** Where the rule requires signatures: the key that verified the resource. */
  signedBy?: string;
  /** What it was pinned to, e.g. sha1:<commit>, sha256:<digest>. */
  digest?: string;
}

/** The digest a resolution pinned, e.g. sha1:<commit>; undefined when the resolver gave none. */
export function digestOf(r: Extract<Resolution, { state: 'resolved' }>): { algo: string; hex: string } | undefined {
  const d = r.refSource?.digest ?? {};
  for (const algo of ['sha1', 'sha256', 'sha512']) if (typeof d[algo] === 'string' && d[algo]) return { algo, hex: d[algo]! };
  return undefined;
}

export function provenanceOf(where: string, ref: RemoteRef, r: Extract<Resolution, { state: 'resolved' }>): Provenance {
  const p = new Map(ref.params.map((x) => [x.name, x.value]));
  const d = digestOf(r);
  const revision = ref.resolver === 'git' ? p.get('revision') : ref.resolver === 'bundles' ? p.get('bundle') : undefined;
  // git: the canonical pathInRepo that was checked (the resolver echoes it as its entryPoint).
  const path = ref.resolver === 'git' ? p.get('pathInRepo') : r.refSource?.entryPoint;
  return {
    ref: where,
    resolver: ref.resolver,
    source: r.refSource?.uri ?? '',
    ...(path ? { path } : {}),
    ...(revision ? { revision } : {}),
    ...(d ? { digest: `${d.algo}:${d.hex}` } : {}),
  };
}

export type GraphRejection = { state: 'rejected'; message: string; code: 'REQUEST_SOURCE_NOT_ALLOWED' | 'REQUEST_RESOLUTION_FAILED' | 'REQUEST_SIGNATURE_INVALID' | 'REQUEST_INVALID' | 'REQUEST_PIPELINE_NOT_FOUND' };

export type GraphResult =
  /** need: resolutions to start; checks: commits to look for in their repositories first; lookups: exact refs to look up first; pathChecks: git paths to check at their commits first. */
  | { state: 'pending'; need: RemoteRef[]; checks: CommitCheck[]; lookups: RefLookup[]; pathChecks: PathCheck[] }
  | GraphRejection
  /**
   * spec: the Pipeline spec to embed, or undefined when nothing had to change
   * (an installed Pipeline runs by name); stepActions: the copies its steps
   * refer to, to create (idempotently: the name is the content's) before the
   * PipelineRun.
   */
  | { state: 'ready'; spec: Record<string, unknown> | undefined; provenance: Provenance[]; stepActions: StepActionCopy[] };

export interface GraphInput {
  /** The Pipeline's spec as resolved or installed. */
  spec: Record<string, unknown>;
  /**
   * installed: the Pipeline is the administrators'; resolved: it came from a
   * remote source. Either way every reference in it (and in the installed
   * Tasks it names) is checked against the source policy, resolved here and
   * pinned: nothing is left for Tekton to resolve. The origin only changes
   * what a refusal says (what an administrator should write).
   */
  origin: 'installed' | 'resolved';
  /** The request's params, as the Pipeline declares them (typed). */
  params: ReadonlyArray<{ name: string; value: ParamValue }>;
  policy: SourcePolicy;
  /** The request's tenant (remote/namespace), for the per-namespace source rules. */
  namespace: string;
  controllerNamespace: string;
  pipelineRunName: string;
  /** The Pipeline's name for $(context.pipeline.name). */
  pipelineName: string;
  /** A reference's resolution, or undefined when it has not been started. */
  lookup(ref: RemoteRef): Resolution | undefined;
  /** What the repository says of a commit asked for by SHA, or undefined when not asked yet. */
  commits?(check: CommitCheck): CommitAnswer | undefined;
  /** What the repository says of an exact ref (the commit it points at), or undefined when not asked yet. */
  refs?(lookup: RefLookup): RefAnswer | undefined;
  /**
   * What the repository says of a git pathInRepo at the commit to be
   * resolved (a regular file, through no symbolic link or submodule), or
   * undefined when not asked yet. Absent: paths are not checked (the
   * controller always gives it).
   */
  paths?(check: PathCheck): PathAnswer | undefined;
  /** Set when no resolver reference may be resolved now (a Tekton version with a known advisory): why. */
  resolversRefused?: string;
  /** A Task installed in the controller's namespace, by name (undefined: not known). */
  installedTask(name: string): Record<string, unknown> | undefined;
}

/** A reference followed to its end: resolved, parsed, pinned; or why not yet, or why not at all. */
export type Followed =
  | { kind: 'resolved'; obj: Record<string, unknown>; pinned: RemoteRef; provenance: Provenance }
  /** ref: the reference in canonical form, the one to resolve (and nothing else). */
  | { kind: 'need'; ref: RemoteRef }
  /** The commit must first be found reachable from the refs the rule names. */
  | { kind: 'check'; check: CommitCheck }
  /** The exact ref must first be looked up in the repository (the commit it points at is what is resolved). */
  | { kind: 'lookup'; lookup: RefLookup }
  /** The file must first be found, at the commit, to be a regular file reached through no symbolic link or submodule. */
  | { kind: 'pathCheck'; check: PathCheck }
  | { kind: 'pending'; ref: RemoteRef }
  | { kind: 'refused'; message: string; code: 'REQUEST_SOURCE_NOT_ALLOWED' | 'REQUEST_RESOLUTION_FAILED' | 'REQUEST_SIGNATURE_INVALID' };
