/**
 * How requesters in the wild read an InternalRequest's status, each written
 * from its own description, independently of how the controller writes it.
 * The contract tests (test/integration/contract.test.ts) check at every
 * status they watch that all three agree; the local demo prints what the
 * first would conclude at each step. Pure functions over the status.
 */

/** The parts of a condition these readers look at. */
export interface ReadCondition {
  type: string;
  status?: string;
  reason?: string;
}

/** The parts of a request these readers look at. */
export interface ReadRequest {
  metadata?: { generation?: number };
  status?: { conditions?: ReadCondition[]; observedGeneration?: number };
}

/** What a reader concludes: keep waiting, or the request finished with success or failure. */
export type Verdict = 'wait' | 'succeeded' | 'failed';

/**
 * (a) The release tooling's wait loop (the shell tool and the Python helper,
 * 2024 and today): it reads `.status.conditions[0].reason` and nothing else.
 * Absent or empty: no condition yet, wait. `Running`: wait. `Succeeded`:
 * success. Anything else: the request ended in failure.
 */
export function requesterLoop(r: ReadRequest): Verdict {
  const reason = r.status?.conditions?.[0]?.reason ?? '';
  if (reason === '' || reason === 'Running') return 'wait';
  if (reason === 'Succeeded') return 'succeeded';
  return 'failed';
}

/** What the Go API's helpers say: any, several or none of these may hold. */
export interface GoReading {
  hasSucceeded: boolean;
  hasFailed: boolean;
  isRunning: boolean;
}

/**
 * (b) The production Go API's helpers, which find the condition of type
 * `Succeeded` (wherever it is in the list): succeeded = status True;
 * finished and failed = status False and reason not `Running`; running =
 * reason `Running` and status not True.
 */
export function goApi(r: ReadRequest): GoReading {
  const c = r.status?.conditions?.find((x) => x.type === 'Succeeded');
  return {
    hasSucceeded: c?.status === 'True',
    hasFailed: c?.status === 'False' && c.reason !== 'Running',
    isRunning: c !== undefined && c.reason === 'Running' && c.status !== 'True',
  };
}

/**
 * The Go reading as a verdict: exactly one helper holds, or none because there
 * is no Succeeded condition yet (the Go caller waits). Any other combination —
 * a condition that is neither running nor finished, or two at once — is
 * undefined: the Go caller cannot tell, which breaks the contract.
 */
export function goApiVerdict(r: ReadRequest): Verdict | undefined {
  const g = goApi(r);
  const held = [g.hasSucceeded, g.hasFailed, g.isRunning].filter(Boolean).length;
  const hasCondition = r.status?.conditions?.some((x) => x.type === 'Succeeded') ?? false;
  if (held === 0) return hasCondition ? undefined : 'wait';
  if (held > 1) return undefined;
  return g.hasSucceeded ? 'succeeded' : g.hasFailed ? 'failed' : 'wait';
}

/**
 * (c) `kubectl wait --for=condition=Succeeded` (and `=False`), in the manner
 * of kstatus: a status older than the spec (observedGeneration below
 * generation) is still in progress; the `Succeeded` condition True is done,
 * False is failed; Unknown or absent is in progress.
 */
export function kubectlWait(r: ReadRequest): Verdict {
  const gen = r.metadata?.generation;
  const observed = r.status?.observedGeneration;
  if (gen !== undefined && observed !== undefined && observed < gen) return 'wait';
  const c = r.status?.conditions?.find((x) => x.type === 'Succeeded');
  if (c?.status === 'True') return 'succeeded';
  if (c?.status === 'False') return 'failed';
  return 'wait';
}

/** The three readings of one status, and whether they agree. */
export function readAll(r: ReadRequest): { requester: Verdict; go: Verdict | undefined; kubectl: Verdict; agree: boolean } {
  const requester = requesterLoop(r);
  const go = goApiVerdict(r);
  const kubectl = kubectlWait(r);
  return { requester, go, kubectl, agree: requester === go && go === kubectl };
}
