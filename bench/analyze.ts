/** Turning what a pass observed (watch timestamps, audit events, /proc samples) into figures and correctness checks. */
import { categoryOf, countRequests, sortCounts, type ApiCount, type AuditEvent, type Category } from './audit.js';
import { createdAt, type RequestRecord } from './observer.js';
import { distribution, round, type Distribution } from './stats.js';

export interface AuditWindow {
  remote: AuditEvent[];
  internal: AuditEvent[];
}

export interface ApiRow extends ApiCount {
  perRequest: number;
}

export interface ApiFigures {
  /** Requests made by the controller's identity in the window, by cluster, verb, resource. */
  rows: ApiRow[];
  totals: Record<Category, number> & { all: number; perRequest: number };
  /** Writes of request state attributed to one request: its status, its PipelineRun (create/update/patch/delete). Events excluded. */
  stateWritesPerAllowed: WritesPerRequest;
  stateWritesPerRejected: WritesPerRequest;
  /** Writes by the controller that belong to no benchmark request (other than Events). */
  unattributedWrites: number;
  eventsCreated: number;
  eventsPerRequest: number;
  /** get requests by the controller (any resource). */
  readsOutsideListWatch: number;
  /** Non-2xx answers to the controller, by code. */
  failedByCode: Record<string, number>;
  /** Writes by every identity (controller, requester, executor…) per second of the window, by cluster. */
  allIdentitiesWritesPerSecond: { remote: number; internal: number };
  /**
   * Every identity's requests in the window, per benchmark request, by cluster:
   * shows the controller's share of each apiserver's work next to the
   * requester's (creates), the simulated executor's and the observer's ("admin").
   */
  byIdentity: Array<{ cluster: string; user: string; writes: number; reads: number; listWatch: number; perRequest: number }>;
}

export interface WritesPerRequest {
  requests: number;
  mean: number | null;
  min: number | null;
  max: number | null;
  /** number of writes -> number of requests with that many. */
  histogram: Record<string, number>;
  /** Mean per request, by cluster/verb/resource. */
  byKind: Record<string, number>;
}

export interface Correctness {
  ok: boolean;
  failures: string[];
  allowed: number;
  rejected: number;
  /** Allowed requests with 0 / more than 1 PipelineRun (watched), rejected ones with any. */
  allowedWithoutPipelineRun: number;
  allowedWithSeveralPipelineRuns: number;
  rejectedWithPipelineRun: number;
  /** Successful PipelineRun creates by the controller in the audit log, and how many of them could be tied to a request. */
  pipelineRunCreatesAudited: number;
  pipelineRunCreatesPerAllowed: { exactlyOne: number; none: number; several: number; forRejected: number };
  neverFinished: number;
  wrongOutcome: number;
  wrongOutcomeSamples: string[];
  createErrors: number;
  controllerErrorLines: number;
  controllerErrorSamples: string[];
  controllerExited: string | null;
  pipelineRunsLeft: number;
  observerGaps: number;
}

export interface Latencies {
  createToRunning: Distribution;
  createToPipelineRun: Distribution;
  pipelineRunDoneToTerminal: Distribution;
  createToTerminal: Distribution;
  /** Requests from non-allowed namespaces: create → Rejected. */
  createToRejected: Distribution;
}

const isWrite = (verb: string) => categoryOf(verb) === 'write';

function writesPerRequest(recs: RequestRecord[], writes: Map<RequestRecord, Map<string, number>>): WritesPerRequest {
  const counts = recs.map((r) => [...(writes.get(r)?.values() ?? [])].reduce((a, b) => a + b, 0));
  const histogram: Record<string, number> = {};
  for (const c of counts) histogram[String(c)] = (histogram[String(c)] ?? 0) + 1;
  const byKind: Record<string, number> = {};
  for (const r of recs) for (const [k, n] of writes.get(r) ?? []) byKind[k] = (byKind[k] ?? 0) + n;
  for (const k of Object.keys(byKind)) byKind[k] = round(byKind[k]! / Math.max(1, recs.length), 3);
  return {
    requests: recs.length,
    mean: counts.length ? round(counts.reduce((a, b) => a + b, 0) / counts.length, 3) : null,
    min: counts.length ? Math.min(...counts) : null,
    max: counts.length ? Math.max(...counts) : null,
    histogram,
    byKind,
  };
}

export function apiFigures(records: RequestRecord[], controllerUser: string, audit: AuditWindow, windowSeconds: number): ApiFigures {
  const n = Math.max(1, records.length);
  const mine = { remote: audit.remote.filter((e) => e.user?.username === controllerUser), internal: audit.internal.filter((e) => e.user?.username === controllerUser) };
  const counts = countRequests('remote', mine.remote);
  countRequests('internal', mine.internal, counts);
  const rows: ApiRow[] = sortCounts(counts).map((c) => ({ ...c, perRequest: round(c.count / n, 3) }));
  const totals = { write: 0, read: 0, 'list/watch': 0, other: 0, all: 0, perRequest: 0 };
  for (const r of rows) {
    totals[r.category] += r.count;
    totals.all += r.count;
  }
  totals.perRequest = round(totals.all / n, 3);

  const byKey = new Map(records.map((r) => [r.key, r]));
  const byPrName = new Map<string, RequestRecord>();
  for (const r of records) {
    for (const nm of r.prNames) byPrName.set(nm, r);
    if (r.uid) byPrName.set(`ir-${r.uid}`, r);
  }
  const writes = new Map<RequestRecord, Map<string, number>>();
  let unattributed = 0;
  let events = 0;
  const failedByCode: Record<string, number> = {};
  const add = (r: RequestRecord, kind: string) => {
    let m = writes.get(r);
    if (!m) writes.set(r, (m = new Map()));
    m.set(kind, (m.get(kind) ?? 0) + 1);
  };
  for (const [cluster, evs] of [['remote', mine.remote], ['internal', mine.internal]] as const) {
    for (const e of evs) {
      const code = e.responseStatus?.code;
      if (code !== undefined && (code < 200 || code >= 300)) failedByCode[String(code)] = (failedByCode[String(code)] ?? 0) + 1;
      if (!isWrite(e.verb)) continue;
      const res = e.objectRef?.resource ?? '';
      const kind = `${cluster} ${e.verb} ${res}${e.objectRef?.subresource ? `/${e.objectRef.subresource}` : ''}`;
      if (res === 'events') {
        if (e.verb === 'create') events++;
        continue;
      }
      let rec: RequestRecord | undefined;
      if (cluster === 'remote' && res === 'internalrequests') rec = byKey.get(`${e.objectRef?.namespace ?? ''}/${e.objectRef?.name ?? ''}`);
      else if (cluster === 'internal' && res === 'pipelineruns') rec = byPrName.get(e.objectRef?.name ?? '');
      if (rec) add(rec, kind);
      else unattributed++;
    }
  }
  const allWrites = (evs: AuditEvent[]) => evs.filter((e) => isWrite(e.verb)).length;
  const byIdentity: ApiFigures['byIdentity'] = [];
  for (const [cluster, evs] of [['remote', audit.remote], ['internal', audit.internal]] as const) {
    const m = new Map<string, { writes: number; reads: number; listWatch: number }>();
    for (const e of evs) {
      const u = e.user?.username ?? '?';
      let c = m.get(u);
      if (!c) m.set(u, (c = { writes: 0, reads: 0, listWatch: 0 }));
      const cat = categoryOf(e.verb);
      if (cat === 'write') c.writes++;
      else if (cat === 'read') c.reads++;
      else if (cat === 'list/watch') c.listWatch++;
    }
    for (const [user, c] of [...m].sort((a, b) => b[1].writes + b[1].reads - (a[1].writes + a[1].reads))) {
      byIdentity.push({ cluster, user, ...c, perRequest: round((c.writes + c.reads + c.listWatch) / n, 2) });
    }
  }
  const secs = Math.max(0.001, windowSeconds);
  return {
    rows,
    totals,
    stateWritesPerAllowed: writesPerRequest(records.filter((r) => r.allowed), writes),
    stateWritesPerRejected: writesPerRequest(records.filter((r) => !r.allowed), writes),
    unattributedWrites: unattributed,
    eventsCreated: events,
    eventsPerRequest: round(events / n, 3),
    readsOutsideListWatch: totals.read,
    failedByCode,
    allIdentitiesWritesPerSecond: { remote: round(allWrites(audit.remote) / secs, 1), internal: round(allWrites(audit.internal) / secs, 1) },
    byIdentity,
  };
}

export function latencies(records: RequestRecord[]): Latencies {
  const d = (f: (r: RequestRecord) => number | undefined, recs = records) => distribution(recs.map(f).filter((x): x is number => x !== undefined));
  const allowed = records.filter((r) => r.allowed);
  const rejected = records.filter((r) => !r.allowed);
  const since = (f: (r: RequestRecord) => number | undefined) => (r: RequestRecord) => {
    const c = createdAt(r);
    const t = f(r);
    return c !== undefined && t !== undefined ? Math.max(0, t - c) : undefined;
  };
  return {
    createToRunning: d(since((r) => r.runningAt), allowed),
    createToPipelineRun: d(since((r) => r.prAddedAt), allowed),
    pipelineRunDoneToTerminal: d((r) => (r.prDoneAt !== undefined && r.terminalAt !== undefined ? Math.max(0, r.terminalAt - r.prDoneAt) : undefined), allowed),
    createToTerminal: d(since((r) => r.terminalAt), allowed),
    createToRejected: d(since((r) => r.terminalAt), rejected),
  };
}

export interface CorrectnessInput {
  records: RequestRecord[];
  controllerUser: string;
  audit: AuditWindow;
  errorLines: number;
  errorSamples: string[];
  controllerExited: string | null;
  observerGaps: number;
  /**
   * The results an allowed request must end with, from its params (the
   * simulated executor's, which real Tekton's run of the benchmark Pipeline
   * must reproduce); without it any non-empty results are accepted.
   */
  expectedResults?: (params: Record<string, string>) => Record<string, string>;
}

/** Stable text of a results map, for comparing. */
function resultsText(r: Record<string, string> | undefined): string {
  return JSON.stringify(Object.entries(r ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

export function correctness(i: CorrectnessInput): Correctness {
  const { records } = i;
  const allowed = records.filter((r) => r.allowed && !r.createError);
  const rejected = records.filter((r) => !r.allowed && !r.createError);
  const failures: string[] = [];

  // PipelineRun creates the apiserver accepted from the controller, tied to requests by name.
  const byPrName = new Map<string, RequestRecord>();
  for (const r of records) {
    for (const nm of r.prNames) byPrName.set(nm, r);
    if (r.uid) byPrName.set(`ir-${r.uid}`, r);
  }
  const creates = new Map<RequestRecord, number>();
  let audited = 0;
  let untied = 0;
  for (const e of i.audit.internal) {
    if (e.user?.username !== i.controllerUser || e.verb !== 'create' || e.objectRef?.resource !== 'pipelineruns' || e.objectRef.subresource) continue;
    const code = e.responseStatus?.code ?? 0;
    if (code < 200 || code >= 300) continue;
    audited++;
    const rec = byPrName.get(e.objectRef?.name ?? '');
    if (rec) creates.set(rec, (creates.get(rec) ?? 0) + 1);
    else untied++;
  }
  const perAllowed = { exactlyOne: 0, none: 0, several: 0, forRejected: 0 };
  for (const r of allowed) {
    const c = creates.get(r) ?? 0;
    if (c === 1) perAllowed.exactlyOne++;
    else if (c === 0) perAllowed.none++;
    else perAllowed.several++;
  }
  for (const r of rejected) perAllowed.forRejected += creates.get(r) ?? 0;

  const allowedWithout = allowed.filter((r) => r.prUids.size === 0).length;
  const allowedSeveral = allowed.filter((r) => r.prUids.size > 1).length;
  const rejectedWith = rejected.filter((r) => r.prUids.size > 0).length;
  const neverFinished = records.filter((r) => !r.createError && r.terminalAt === undefined).length;
  const wrong: string[] = [];
  for (const r of allowed) {
    if (r.terminalAt === undefined) continue;
    if (r.terminalStatus !== 'True' || !r.resultCount) wrong.push(`${r.key}: expected Succeeded with results, got ${r.terminalStatus}/${r.terminalReason} (${r.resultCount ?? 0} results): ${r.terminalMessage ?? ''}`);
    else if (i.expectedResults && r.params && r.results) {
      const want = resultsText(i.expectedResults(r.params));
      const got = resultsText(r.results);
      if (want !== got) wrong.push(`${r.key}: expected results ${want}, got ${got}`);
    }
  }
  for (const r of rejected) {
    if (r.terminalAt !== undefined && !(r.terminalStatus === 'False' && r.terminalReason === 'Rejected')) wrong.push(`${r.key}: expected Rejected, got ${r.terminalStatus}/${r.terminalReason}: ${r.terminalMessage ?? ''}`);
  }
  const createErrors = records.filter((r) => r.createError).length;
  const left = records.filter((r) => r.prUids.size > 0 && r.prDeletedAt === undefined).length;

  if (allowedWithout) failures.push(`${allowedWithout} allowed requests never got a PipelineRun`);
  if (allowedSeveral) failures.push(`${allowedSeveral} allowed requests got more than one PipelineRun`);
  if (rejectedWith) failures.push(`${rejectedWith} rejected requests got a PipelineRun`);
  if (perAllowed.several) failures.push(`audit log: ${perAllowed.several} allowed requests had more than one PipelineRun created`);
  if (perAllowed.forRejected) failures.push(`audit log: ${perAllowed.forRejected} PipelineRuns created for rejected requests`);
  if (untied === 0 && perAllowed.none && allowedWithout === 0) failures.push(`audit log: ${perAllowed.none} allowed requests have no PipelineRun create by the controller`);
  if (neverFinished) failures.push(`${neverFinished} requests never finished`);
  if (wrong.length) failures.push(`${wrong.length} requests ended with the wrong outcome (e.g. ${wrong[0]})`);
  if (i.errorLines) failures.push(`${i.errorLines} error-level lines in the controller log (e.g. ${i.errorSamples[0] ?? ''})`);
  if (i.controllerExited) failures.push(`the controller exited during the run (${i.controllerExited})`);
  if (createErrors) failures.push(`${createErrors} requests could not be created (benchmark or apiserver problem, not the controller's)`);
  return {
    ok: failures.length === 0,
    failures,
    allowed: allowed.length,
    rejected: rejected.length,
    allowedWithoutPipelineRun: allowedWithout,
    allowedWithSeveralPipelineRuns: allowedSeveral,
    rejectedWithPipelineRun: rejectedWith,
    pipelineRunCreatesAudited: audited,
    pipelineRunCreatesPerAllowed: perAllowed,
    neverFinished,
    wrongOutcome: wrong.length,
    wrongOutcomeSamples: wrong.slice(0, 5),
    createErrors,
    controllerErrorLines: i.errorLines,
    controllerErrorSamples: i.errorSamples.slice(0, 5),
    controllerExited: i.controllerExited,
    pipelineRunsLeft: left,
    observerGaps: i.observerGaps,
  };
}
