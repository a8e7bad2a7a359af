/** /healthz (the process is alive) and /readyz (both clusters reachable, caches synced). */
import http from 'node:http';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { ConfigError } from '../errors.js';
import type { ReadinessCheck } from '../kube/informer.js';

export interface BindAddress {
  host?: string;
  port: number;
}

/** ":8080", "127.0.0.1:8080", "[::1]:8080"; "0" disables (undefined). */
export function parseBindAddress(flag: string, value: string): BindAddress | undefined {
  if (value === '0') return undefined;
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(value);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw new ConfigError('CONFIG_FLAG', `${flag} "${value}" is not an address like :8080 or 127.0.0.1:8080 (0 disables)`);
  const host = m[1] ?? m[2];
  return host ? { host, port } : { port };
}

export interface Closable {
  close(): Promise<void>;
  port: number;
}

export function listen(addr: BindAddress, handler: http.RequestListener, log: Logger, what: string): Promise<Closable> {
  const server = http.createServer(handler);
  return new Promise((resolve, reject) => {
    server.once('error', (e) => reject(new ConfigError('CONFIG_FLAG', `cannot listen for ${what} on ${addr.host ?? ''}:${addr.port}: ${e.message}`)));
    server.listen(addr.port, addr.host, () => {
      const a = server.address();
      const port = typeof a === 'object' && a ? a.port : addr.port;
      log.info({ address: `${addr.host ?? ''}:${port}` }, `serving ${what}`);
      resolve({
        port,
        close: () => new Promise<void>((r) => { server.closeAllConnections(); server.close(() => r()); }),
      });
    });
  });
}

export type { ReadinessCheck };

export function startHealthServer(addr: BindAddress, ready: () => ReadinessCheck[], log: Logger): Promise<Closable> {
  return listen(
    addr,
    (req, res) => {
      const path = (req.url ?? '').split('?')[0];
      if (path === '/healthz' || path === '/livez') {
        res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      } else if (path === '/readyz') {
        const checks = ready();
        const ok = checks.every((c) => c.ok || !c.required);
        const lines = checks.map((c) => `[${c.ok ? '+' : '-'}]${c.name} ${c.ok ? 'ok' : 'failed'}${c.detail ? `: ${c.detail}` : ''}`);
        res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(`${lines.join('\n')}\n${ok ? 'ok' : 'not ready'}\n`);
      } else {
        res.writeHead(404).end();
      }
    },
    log,
    'health probes',
  );
}

export function startMetricsServer(addr: BindAddress, registry: Registry, log: Logger): Promise<Closable> {
  return listen(
    addr,
    (req, res) => {
      if ((req.url ?? '').split('?')[0] !== '/metrics') {
        res.writeHead(404).end();
        return;
      }
      registry.metrics().then(
        (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
        (e: unknown) => res.writeHead(500).end(String(e)),
      );
    },
    log,
    'metrics',
  );
}
