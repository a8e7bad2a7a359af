/**
 * Ceiling: the raw write rate of the internal apiserver on this machine.
 * `clients` concurrent clients, each on its own keep-alive connection, loop
 * create → update → delete of a small ConfigMap for `seconds` (after a short
 * warm-up). Every write goes through the same apiserver, etcd, audit log and
 * RBAC as the controller's, so it is the limit a controller's writes share.
 */
import https from 'node:https';
import { type ControlPlane, ensureNamespace } from '../src/localenv/index.js';
import { distribution, round, type Distribution } from './stats.js';

export interface CeilingResult {
  clients: number;
  seconds: number;
  writes: number;
  writesPerSecond: number;
  /** Complete create+update+delete cycles per second. */
  cyclesPerSecond: number;
  latencyMs: { create: Distribution; update: Distribution; delete: Distribution };
  errors: number;
  /** CPU the benchmark process itself used meanwhile (it competes for the same cores). */
  clientCpuSeconds: number;
}

interface Answer {
  status: number;
  body: string;
}

function call(agent: https.Agent, plane: ControlPlane, token: string, method: string, path: string, body?: unknown): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const req = https.request(
      `${plane.url}${path}`,
      {
        method,
        agent,
        ca: plane.caPem,
        headers: {
          Authorization: `Bearer ${token}`,
          Accept: 'application/json',
          ...(data ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data) } : {}),
        },
        timeout: 30_000,
      },
      (res) => {
        let s = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (s += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: s }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(data);
  });
}

export async function measureCeiling(plane: ControlPlane, opts: { clients: number; seconds: number; warmupSeconds?: number; log: (m: string) => void }): Promise<CeilingResult> {
  const ns = 'bench-ceiling';
  await ensureNamespace(plane.identities.admin.kubeConfig(), ns);
  const token = plane.identities.admin.token;
  const base = `/api/v1/namespaces/${ns}/configmaps`;
  const warmupMs = (opts.warmupSeconds ?? 1) * 1000;
  const start = performance.now();
  const measureFrom = start + warmupMs;
  const end = measureFrom + opts.seconds * 1000;
  const lat = { create: [] as number[], update: [] as number[], delete: [] as number[] };
  let writes = 0;
  let cycles = 0;
  let errors = 0;
  let cpu0: NodeJS.CpuUsage | undefined;
  const warm = setTimeout(() => (cpu0 = process.cpuUsage()), warmupMs);

  const client = async (c: number) => {
    const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
    let i = 0;
    while (performance.now() < end) {
      const name = `c${c}-${i++}`;
      const timed = async (op: 'create' | 'update' | 'delete', f: () => Promise<Answer>, ok: number[]): Promise<Answer | undefined> => {
        const t = performance.now();
        const a = await f().catch((e: Error) => ({ status: 0, body: e.message }));
        const now = performance.now();
        if (!ok.includes(a.status)) {
          errors++;
          return undefined;
        }
        if (t >= measureFrom && now <= end) {
          lat[op].push(now - t);
          writes++;
        }
        return a;
      };
      const created = await timed('create', () => call(agent, plane, token, 'POST', base, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { n: '0' } }), [201]);
      if (!created) continue;
      const cm = JSON.parse(created.body) as { metadata: Record<string, unknown>; data: Record<string, string> };
      cm.data = { n: '1' };
      const cycleStart = performance.now();
      await timed('update', () => call(agent, plane, token, 'PUT', `${base}/${name}`, cm), [200]);
      const deleted = await timed('delete', () => call(agent, plane, token, 'DELETE', `${base}/${name}`), [200, 202]);
      if (deleted && cycleStart >= measureFrom && performance.now() <= end) cycles++;
    }
    agent.destroy();
  };
  opts.log(`ceiling: ${opts.clients} clients × create/update/delete ConfigMaps for ${opts.seconds} s on the ${plane.name} apiserver`);
  await Promise.all(Array.from({ length: opts.clients }, (_, c) => client(c)));
  clearTimeout(warm);
  const cpu = process.cpuUsage(cpu0);
  return {
    clients: opts.clients,
    seconds: opts.seconds,
    writes,
    writesPerSecond: round(writes / opts.seconds, 1),
    cyclesPerSecond: round(cycles / opts.seconds, 1),
    latencyMs: { create: distribution(lat.create), update: distribution(lat.update), delete: distribution(lat.delete) },
    errors,
    clientCpuSeconds: round((cpu.user + cpu.system) / 1e6, 2),
  };
}
