/**
 * The closed world (issue 51), checked over a whole run from the internal
 * apiserver's audit log: the replay behind test/closed-world-audit.ts.
 *
 * The log's events are replayed in order (those at ResponseComplete whose
 * response was 2xx; see src/localenv/real/audit-policy.ts for what is logged).
 * The writes of Pipelines, Tasks and StepActions keep, per namespace, what is
 * installed at each moment (the object as stored: the event's responseObject,
 * which is what a patch leaves). Every create of a PipelineRun the controller
 * made (label app.kubernetes.io/managed-by=internal-services on the object it
 * sent) is checked by closedWorldViolations against what was installed in its
 * namespace at that moment, with the StepAction copies present there then as
 * the copies it may name: both the object as sent and as stored (after
 * Tekton's defaulting webhook), since Tekton runs the latter. PipelineRuns
 * made by anyone else are counted, with who made them, and not checked.
 *
 * Pure: lines in, counts out.
 */
import { closedWorldViolations, type Violation } from '../src/tekton/closed-world.js';
import { LABEL_MANAGED_BY, MANAGED_BY } from '../src/tekton/pipelinerun.js';
import { LABEL_STEPACTION_COPY, STEPACTION_COPY_PREFIX } from '../src/tekton/stepaction-copy.js';

type Obj = Record<string, unknown>;
const isObj = (x: unknown): x is Obj => typeof x === 'object' && x !== null && !Array.isArray(x);

/** The fields of an audit.k8s.io/v1 Event this replay reads. */
interface AuditEvent {
  stage?: string;
  verb?: string;
  requestURI?: string;
  user?: { username?: string };
  objectRef?: { resource?: string; subresource?: string; namespace?: string; name?: string; apiGroup?: string };
  responseStatus?: { code?: number };
  requestObject?: unknown;
  responseObject?: unknown;
}

/** A PipelineRun of the controller that would leave the closed world. */
export interface RunViolation {
  file: string;
  /** 1-based line of the log. */
  line: number;
  namespace: string;
  name: string;
  violations: Violation[];
}

export interface ReplayResult {
  /** PipelineRuns created by the controller and checked. */
  checked: number;
  /** PipelineRuns created by others, by why they were not checked (who made them, with which label). */
  excluded: Map<string, number>;
  violations: RunViolation[];
  /** Lines that could not be read, or writes without their object: the replay cannot be trusted past them. */
  unreadable: string[];
  /** A log's last line, cut short (its apiserver was killed while writing it): noted only. */
  incomplete: string[];
  /** Events replayed (2xx writes of the audited resources). */
  replayed: number;
}

const INSTALLED = ['pipelines', 'tasks', 'stepactions'] as const;
type InstalledKind = (typeof INSTALLED)[number];
const isInstalledKind = (r: string | undefined): r is InstalledKind => (INSTALLED as readonly string[]).includes(r ?? '');

const nameOf = (o: unknown): string | undefined => {
  const md = isObj(o) ? o['metadata'] : undefined;
  return isObj(md) && typeof md['name'] === 'string' && md['name'] ? md['name'] : undefined;
};
const labelsOf = (o: unknown): Obj => {
  const md = isObj(o) ? o['metadata'] : undefined;
  return isObj(md) && isObj(md['labels']) ? md['labels'] : {};
};

/** Replays one audit log, line by line (feed), then gives its result (finish). */
export class AuditReplay {
  /** namespace → kind → name → the object as stored. */
  private readonly installed = new Map<string, Record<InstalledKind, Map<string, Obj>>>();
  private readonly result: ReplayResult = { checked: 0, excluded: new Map(), violations: [], unreadable: [], incomplete: [], replayed: 0 };

  constructor(private readonly file: string) {}

  private ns(namespace: string): Record<InstalledKind, Map<string, Obj>> {
    let v = this.installed.get(namespace);
    if (!v) this.installed.set(namespace, (v = { pipelines: new Map(), tasks: new Map(), stepactions: new Map() }));
    return v;
  }

  /** One line of the log (1-based `line`); `incomplete`: the file's last line, with no newline after it. */
  feed(text: string, line: number, incomplete = false): void {
    if (text.trim() === '') return;
    let ev: AuditEvent;
    try {
      ev = JSON.parse(text) as AuditEvent;
    } catch {
      // The last event of an apiserver killed while writing it is noted; any other line that cannot be read fails the check.
      (incomplete ? this.result.incomplete : this.result.unreadable).push(`${this.file}:${line}: ${incomplete ? 'an incomplete last line' : 'not JSON'} (${text.slice(0, 80)}…)`);
      return;
    }
    const ref = ev.objectRef;
    if (ev.stage !== 'ResponseComplete' || ref?.apiGroup !== 'tekton.dev' || ref.subresource) return;
    const code = ev.responseStatus?.code ?? 0;
    if (code < 200 || code > 299) return;
    const namespace = ref.namespace ?? '';
    if (ref.resource === 'pipelineruns') {
      if (ev.verb === 'create') this.created(ev, namespace, line);
      return;
    }
    if (!isInstalledKind(ref.resource) || isDryRun(ev.requestURI)) return;
    this.result.replayed++;
    const objects = this.ns(namespace)[ref.resource];
    switch (ev.verb) {
      case 'create':
      case 'update':
      case 'patch': {
        // The object as stored; a create's or an update's body when the response was not recorded.
        const obj = isObj(ev.responseObject) ? ev.responseObject : ev.verb !== 'patch' && isObj(ev.requestObject) ? ev.requestObject : undefined;
        const name = nameOf(obj) ?? ref.name;
        if (!obj || !name) {
          this.result.unreadable.push(`${this.file}:${line}: a ${ev.verb} of ${ref.resource} ${namespace}/${ref.name ?? '?'} without the object as stored`);
          return;
        }
        objects.set(name, obj);
        return;
      }
      case 'delete':
        if (ref.name) objects.delete(ref.name);
        return;
      case 'deletecollection': {
        // The response lists what was deleted; without it, everything of the kind there is taken as gone (stricter, never laxer).
        const items = isObj(ev.responseObject) && Array.isArray(ev.responseObject['items']) ? ev.responseObject['items'] : undefined;
        if (items) for (const it of items) objects.delete(nameOf(it) ?? '');
        else objects.clear();
        return;
      }
    }
  }

  private created(ev: AuditEvent, namespace: string, line: number): void {
    const sent = ev.requestObject;
    const stored = ev.responseObject;
    const name = nameOf(stored) ?? nameOf(sent) ?? ev.objectRef?.name ?? '?';
    const managedBy = labelsOf(sent)[LABEL_MANAGED_BY];
    if (isDryRun(ev.requestURI)) return this.exclude('a server-side dry run (nothing was created)');
    if (managedBy !== MANAGED_BY) {
      return this.exclude(`${managedBy === undefined ? `no ${LABEL_MANAGED_BY} label` : `${LABEL_MANAGED_BY}=${String(managedBy)}`}, created by ${ev.user?.username ?? '?'}`);
    }
    this.result.checked++;
    const here = this.ns(namespace);
    const copies = new Set(
      [...here.stepactions].filter(([n, o]) => n.startsWith(STEPACTION_COPY_PREFIX) && labelsOf(o)[LABEL_STEPACTION_COPY] === 'true').map(([n]) => n),
    );
    const ctx = {
      installedPipeline: (n: string) => here.pipelines.get(n),
      installedTask: (n: string) => here.tasks.get(n),
      copies,
      copyPrefix: STEPACTION_COPY_PREFIX,
    };
    const found: Violation[] = isObj(sent) ? closedWorldViolations(sent, ctx) : [{ position: '(request)', why: 'the object as sent was not recorded' }];
    if (isObj(stored)) {
      const seen = new Set(found.map((v) => `${v.position}\n${v.why}`));
      for (const v of closedWorldViolations(stored, ctx)) {
        if (!seen.has(`${v.position}\n${v.why}`)) found.push({ position: v.position, why: `${v.why} (in the object as stored, after admission)` });
      }
    }
    if (found.length) this.result.violations.push({ file: this.file, line, namespace, name, violations: found });
  }

  private exclude(why: string): void {
    this.result.excluded.set(why, (this.result.excluded.get(why) ?? 0) + 1);
  }

  finish(): ReplayResult {
    return this.result;
  }
}

function isDryRun(uri: string | undefined): boolean {
  const query = uri?.split('?')[1];
  return query !== undefined && new URLSearchParams(query).getAll('dryRun').length > 0;
}

/** Several logs' results as one. */
export function mergeResults(results: readonly ReplayResult[]): ReplayResult {
  const out: ReplayResult = { checked: 0, excluded: new Map(), violations: [], unreadable: [], incomplete: [], replayed: 0 };
  for (const r of results) {
    out.checked += r.checked;
    out.replayed += r.replayed;
    out.violations.push(...r.violations);
    out.unreadable.push(...r.unreadable);
    out.incomplete.push(...r.incomplete);
    for (const [why, n] of r.excluded) out.excluded.set(why, (out.excluded.get(why) ?? 0) + n);
  }
  return out;
}

/** The summary line, then one line per excluded group, per violation and per unreadable line. */
export function report(r: ReplayResult, logs: number): { lines: string[]; ok: boolean } {
  const others = [...r.excluded.values()].reduce((a, b) => a + b, 0);
  const violations = r.violations.reduce((a, v) => a + v.violations.length, 0);
  const lines = [
    `closed-world audit: ${r.checked} PipelineRuns created by the controller checked in ${logs} audit logs, ${violations} violations` +
      `${r.violations.length ? ` in ${r.violations.length} PipelineRuns` : ''}${r.unreadable.length ? `, ${r.unreadable.length} unreadable lines` : ''} (${others} created by others, not checked)`,
  ];
  for (const [why, n] of [...r.excluded].sort((a, b) => b[1] - a[1])) lines.push(`  not checked: ${n} × ${why}`);
  for (const v of r.violations) {
    lines.push(`  VIOLATION ${v.file}:${v.line} PipelineRun ${v.namespace}/${v.name}:`);
    for (const x of v.violations) lines.push(`    ${x.position}: ${x.why}`);
  }
  for (const u of r.unreadable) lines.push(`  UNREADABLE ${u}`);
  for (const u of r.incomplete) lines.push(`  note: ${u}`);
  return { lines, ok: r.violations.length === 0 && r.unreadable.length === 0 };
}
