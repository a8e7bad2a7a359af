/**
 * The RequestDefinitions of the controller's namespace, turned into the
 * request kinds it serves: the built-in ones (InternalRequest) first, then
 * one typed kind per definition that is served, valid and clashes with no
 * other (the older definition keeps a Kind or resource that two claim).
 *
 * A definition that changes is a new kind object: the remotes list its
 * requests again and read them the new way (Remote.setKinds); requests in
 * flight lose nothing, since what runs for a request is found by its name on
 * the internal side. A definition removed, or set `served: false`, stops its
 * kind: its requests and their PipelineRuns are left as they are.
 *
 * Each definition's status says whether its kind is served, and if not why
 * (condition Served: Invalid, Conflict, NotServed), and which remotes cannot
 * list it (e.g. its CRD is not installed there).
 */
import type { Logger } from 'pino';
import { rfc3339 } from '../api/conditions.js';
import { kindNames, REQUEST_DEFINITION, type RequestDefinition, type RequestDefinitionStatus } from '../api/request-definition.js';
import { definitionProblems } from '../api/typed-kind-crd.js';
import type { Condition } from '../api/types.js';
import { describeError, statusCode, type Cluster, type ResourceClient } from '../kube/client.js';
import { Informer, type InformerOptions, type ReadinessCheck } from '../kube/informer.js';
import type { RequestKind } from '../requests/request-kind.js';
import { typedRequestKind, type TypedRequestKind } from '../requests/typed-request-kind.js';
import { compareText } from '../util/compare.js';

export interface DefinitionsOptions {
  internal: Cluster;
  namespace: string;
  log: Logger;
  informer: Pick<InformerOptions, 'resyncPeriodMs' | 'observer' | 'watchTimeoutSeconds' | 'backoffMaxMs'>;
  /** The kinds served whatever the definitions say (InternalRequest). */
  builtIn: readonly RequestKind[];
  /** Serve these kinds from now on. */
  apply(kinds: readonly RequestKind[]): Promise<void>;
  /** Remotes that cannot list a kind now: remote name → why, for the status. */
  failing?(kind: RequestKind): Array<{ remote: string; why: string }>;
  now?: () => Date;
}

/** One definition's verdict. */
export interface Verdict {
  kind?: TypedRequestKind;
  reason: 'Served' | 'Invalid' | 'Conflict' | 'NotServed';
  message: string;
}

/**
 * Which definitions are served (pure): in the order of creation (then name),
 * each valid, served definition whose Kind and resource no earlier kind
 * holds. `previous` keeps the kind objects of unchanged definitions, so that
 * their caches are not listed again.
 */
export function judge(defs: readonly RequestDefinition[], builtIn: readonly RequestKind[], previous: ReadonlyMap<string, TypedRequestKind> = new Map()): Map<string, Verdict> {
  const taken = new Map<string, string>();
  for (const k of builtIn) {
    taken.set(`kind ${k.kind}`, 'the built-in kind');
    taken.set(`resource ${k.resource.plural}.${k.resource.group}`, 'the built-in kind');
  }
  const order = [...defs].sort((a, b) => compareText(a.metadata.creationTimestamp ?? '', b.metadata.creationTimestamp ?? '') || compareText(a.metadata.name ?? '', b.metadata.name ?? ''));
  const out = new Map<string, Verdict>();
  for (const d of order) {
    const name = d.metadata.name ?? '';
    if (d.spec?.served === false) {
      out.set(name, { reason: 'NotServed', message: 'spec.served is false: requests of this kind are left as they are (set it to true, or remove it, to serve them)' });
      continue;
    }
    const problems = d.spec && typeof d.spec.group === 'string' && typeof d.spec.kind === 'string' ? definitionProblems(d.spec) : ['spec.group and spec.kind are required'];
    if (problems.length) {
      out.set(name, { reason: 'Invalid', message: problems.join('; ') });
      continue;
    }
    const n = kindNames(d.spec);
    const ids = [`kind ${n.kind}`, `resource ${n.plural}.${n.group}`];
    const holder = ids.map((id) => [id, taken.get(id)] as const).find(([, h]) => h !== undefined);
    if (holder) {
      out.set(name, { reason: 'Conflict', message: `the ${holder[0]} is served already, for ${holder[1]}; give this kind another name` });
      continue;
    }
    for (const id of ids) taken.set(id, `RequestDefinition ${name}`);
    const prev = previous.get(name);
    const same = prev && prev.definition.generation === (d.metadata.generation ?? 0) && prev.definition.name === name;
    const kind = same ? prev : typedRequestKind(d);
    out.set(name, { kind, reason: 'Served', message: `serving ${n.plural}.${n.group}/${n.version} (kind ${n.kind})` });
  }
  return out;
}

export class RequestDefinitions {
  readonly informer: Informer<RequestDefinition>;
  private readonly client: ResourceClient<RequestDefinition>;
  private current = new Map<string, TypedRequestKind>();
  private timer: NodeJS.Timeout | undefined;
  private pending: Promise<void> = Promise.resolve();
  private scheduled = false;
  private statusTimer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: DefinitionsOptions) {
    this.client = opts.internal.resource<RequestDefinition>(REQUEST_DEFINITION);
    const changed = () => this.schedule();
    this.informer = new Informer<RequestDefinition>('internal/requestdefinitions', this.client, { onAdd: changed, onUpdate: changed, onDelete: changed, onResync: changed }, opts.log, {
      ...opts.informer,
      namespace: opts.namespace,
    });
  }

  /** The typed kinds served now, by definition name. */
  get served(): ReadonlyMap<string, TypedRequestKind> {
    return this.current;
  }

  readiness(): ReadinessCheck {
    return this.informer.readiness(false);
  }

  /**
   * Starts the cache and waits (at most `waitMs`) for its first list, then
   * serves what it says. Without the CRD (an old installation) or the right
   * to list, only the built-in kinds are served, and the cache keeps trying.
   */
  async start(waitMs = 10_000): Promise<void> {
    this.informer.start();
    const listed = await Promise.race([this.informer.waitForSync().then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), waitMs).unref())]);
    if (!listed) this.opts.log.warn({ waitedMs: waitMs }, 'RequestDefinitions could not be listed yet; serving the built-in request kinds meanwhile');
    else await this.update();
    // The status names remotes that cannot list a kind: looked at again now and then.
    this.statusTimer = setInterval(() => this.schedule(), 10_000);
    this.statusTimer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    if (this.statusTimer) clearInterval(this.statusTimer);
    await this.informer.stop();
    await this.pending;
  }

  /** Changes come in bursts (a list, an apply of several): one update after them. */
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    this.timer = setTimeout(() => {
      this.scheduled = false;
      this.pending = this.pending.then(() => this.update()).catch((e: unknown) => this.opts.log.error({ err: describeError(e) }, 'request definitions: update failed'));
    }, 100);
    this.timer.unref();
  }

  /** Serves what the definitions say now and writes their status. */
  async update(): Promise<void> {
    if (!this.informer.synced) return;
    const defs = [...this.informer.list()];
    const verdicts = judge(defs, this.opts.builtIn, this.current);
    const next = new Map<string, TypedRequestKind>();
    for (const [name, v] of verdicts) if (v.kind) next.set(name, v.kind);
    const changed = next.size !== this.current.size || [...next].some(([n, k]) => this.current.get(n) !== k);
    if (changed) {
      const before = new Set([...this.current.values()].map((k) => k.kind));
      this.current = next;
      await this.opts.apply([...this.opts.builtIn, ...next.values()]);
      const after = [...next.values()].map((k) => k.kind);
      this.opts.log.info({ kinds: after, stopped: [...before].filter((k) => !after.includes(k)) }, 'request kinds served');
    }
    for (const d of defs) {
      const v = verdicts.get(d.metadata.name ?? '');
      if (v) await this.writeStatus(d, v);
    }
  }

  private async writeStatus(d: RequestDefinition, v: Verdict): Promise<void> {
    let message = v.message;
    let ok = v.reason === 'Served';
    if (v.kind) {
      const failing = this.opts.failing?.(v.kind) ?? [];
      if (failing.length) {
        ok = false;
        message += `; not listable on ${failing.map((f) => `remote ${f.remote} (${f.why})`).join(', ')}: install its CRD there (internal-services kinds render ${d.metadata.name ?? ''})`;
      }
    }
    const gen = d.metadata.generation ?? 0;
    const old = d.status?.conditions?.find((c) => c.type === 'Served');
    const status = ok ? 'True' : 'False';
    const reason = v.reason === 'Served' && !ok ? 'NotListable' : v.reason;
    const n = d.spec && typeof d.spec.kind === 'string' && typeof d.spec.group === 'string' ? kindNames(d.spec) : undefined;
    const cond: Condition = {
      type: 'Served',
      status,
      reason,
      message,
      observedGeneration: gen,
      lastTransitionTime: old && old.status === status ? old.lastTransitionTime : rfc3339((this.opts.now ?? (() => new Date()))()),
    };
    const next: RequestDefinitionStatus = { observedGeneration: gen, conditions: [cond], ...(n ? { resource: `${n.plural}.${n.group}/${n.version}` } : {}) };
    if (JSON.stringify(d.status ?? {}) === JSON.stringify(next)) return;
    try {
      await this.client.replaceStatus(this.opts.namespace, d.metadata.name ?? '', { ...d, status: next });
    } catch (e) {
      // A conflict or a delete: the next change brings it back.
      if (statusCode(e) !== 409 && statusCode(e) !== 404) this.opts.log.warn({ definition: d.metadata.name, err: describeError(e) }, 'request definitions: status not written');
    }
  }
}
