/**
 * Fair capacity on the private cluster: at most `maxRunning` PipelineRuns at
 * once (and `maxRunningPerNamespace` per remote namespace); requests beyond
 * that wait (phase Queued) and start in fair order — tenants take turns,
 * those with fewer runs first, each tenant's requests oldest first — not in
 * arrival order. Pure: no I/O.
 */
import { describeTenant } from './tenant.js';

export interface Capacity {
  /** undefined: no limit. */
  maxRunning: number | undefined;
  maxRunningPerNamespace: number | undefined;
}

export interface Waiting {
  key: string;
  tenant: string;
  /** creationTimestamp, for the order within a tenant. */
  created: string;
}

export interface CapacityView {
  /** PipelineRuns of ours not finished yet. */
  running: number;
  runningByTenant: ReadonlyMap<string, number>;
  /** Requests waiting for a slot (phase Queued), in no particular order. */
  waiting: readonly Waiting[];
  /** When each namespace last had a run started (ms): the one served longest ago has the next turn. */
  lastStartByTenant?: ReadonlyMap<string, number>;
}

export type Admission = { admitted: true } | { admitted: false; position: number; waiting: number; why: string };

/**
 * The order in which waiting requests get slots: round-robin over tenants
 * (fewest running first, then the one whose last run started longest ago,
 * then the one waiting longest), each tenant's oldest
 * request first; a tenant at its own maximum gets no turn.
 */
export function fairOrder(view: CapacityView, cap: Capacity): string[] {
  const lanes = new Map<string, Waiting[]>();
  for (const w of view.waiting) {
    const l = lanes.get(w.tenant);
    if (l) l.push(w);
    else lanes.set(w.tenant, [w]);
  }
  for (const l of lanes.values()) l.sort((a, b) => (a.created < b.created ? -1 : a.created > b.created ? 1 : a.key < b.key ? -1 : 1));
  const running = new Map(view.runningByTenant);
  const last = view.lastStartByTenant ?? new Map<string, number>();
  const tenants = [...lanes.keys()].sort(
    (a, b) => (running.get(a) ?? 0) - (running.get(b) ?? 0) || (last.get(a) ?? -1) - (last.get(b) ?? -1) || (lanes.get(a)![0]!.created < lanes.get(b)![0]!.created ? -1 : 1),
  );
  const order: string[] = [];
  const next = new Map<string, number>();
  for (let progressed = true; progressed; ) {
    progressed = false;
    for (const t of tenants) {
      const lane = lanes.get(t)!;
      const i = next.get(t) ?? 0;
      if (i >= lane.length) continue;
      if (cap.maxRunningPerNamespace !== undefined && (running.get(t) ?? 0) >= cap.maxRunningPerNamespace) continue;
      order.push(lane[i]!.key);
      next.set(t, i + 1);
      running.set(t, (running.get(t) ?? 0) + 1);
      progressed = true;
    }
  }
  return order;
}

/** Whether this request may start now; if not, its place in the fair order and why. */
export function admit(self: Waiting, view: CapacityView, cap: Capacity): Admission {
  if (cap.maxRunning === undefined && cap.maxRunningPerNamespace === undefined) return { admitted: true };
  const waiting = view.waiting.some((w) => w.key === self.key) ? view.waiting : [...view.waiting, self];
  const order = fairOrder({ ...view, waiting }, cap);
  const free = cap.maxRunning === undefined ? Infinity : Math.max(0, cap.maxRunning - view.running);
  const i = order.indexOf(self.key);
  if (i >= 0 && i < free) return { admitted: true };
  const mine = view.runningByTenant.get(self.tenant) ?? 0;
  const why =
    i < 0
      ? `${describeTenant(self.tenant)} has all its ${cap.maxRunningPerNamespace} slots taken (capacity.maxRunningPerNamespace; ${mine} PipelineRuns running)`
      : `all ${cap.maxRunning} slots are taken (capacity.maxRunning; ${view.running} PipelineRuns running)`;
  return { admitted: false, position: i < 0 ? waiting.length : i + 1, waiting: waiting.length, why };
}
