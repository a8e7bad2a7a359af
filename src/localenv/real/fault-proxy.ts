/**
 * A TCP proxy to put between a client and an API server to break the network
 * on purpose (TLS passes through untouched):
 * - cut(): reset every open connection;
 * - blackhole(true): bytes stop moving, on the open connections and on new
 *   ones (which are accepted, then hang), as a firewall that drops packets;
 * - latencyMs: every chunk is delayed that long, in order;
 * - cutAfterMs: every connection is reset that long after it opened, as
 *   proxies that cut long-lived connections do.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';

/** A copy of a kubeconfig file whose cluster server is `server` (e.g. a FaultProxy's url). */
export function kubeconfigVia(path: string, server: string, outPath: string): string {
  writeFileSync(outPath, readFileSync(path, 'utf8').replace(/server: \S+/g, `server: ${server}`));
  return outPath;
}

interface Conn {
  a: net.Socket;
  b: net.Socket;
  frozen: boolean;
}

export class FaultProxy {
  private readonly server: net.Server;
  private readonly conns = new Set<Conn>();
  private holed = false;
  port = 0;
  /** Connections reset by cutAfterMs so far. */
  cuts = 0;
  /** Delay added to every chunk, both ways. */
  latencyMs = 0;

  constructor(
    private readonly target: { host: string; port: number },
    cutAfterMs?: number,
  ) {
    this.server = net.createServer((a) => {
      const b = net.connect(this.target.port, this.target.host);
      const c: Conn = { a, b, frozen: this.holed };
      this.conns.add(c);
      if (cutAfterMs !== undefined) {
        const t = setTimeout(() => {
          if (!this.conns.has(c)) return;
          this.cuts++;
          a.destroy();
          b.destroy();
        }, cutAfterMs);
        a.on('close', () => clearTimeout(t));
      }
      const forward = (to: net.Socket) => (d: Buffer) => {
        if (c.frozen) return;
        if (this.latencyMs > 0) setTimeout(() => to.destroyed || to.write(d), this.latencyMs);
        else to.write(d);
      };
      a.on('data', forward(b));
      b.on('data', forward(a));
      const end = () => {
        a.destroy();
        b.destroy();
        this.conns.delete(c);
      };
      a.on('close', end).on('error', end);
      b.on('close', end).on('error', end);
    });
  }

  /** The proxy's address as a URL with the target's scheme (https). */
  get url(): string {
    return `https://127.0.0.1:${this.port}`;
  }

  listen(): Promise<void> {
    return new Promise((r) =>
      this.server.listen(0, '127.0.0.1', () => {
        this.port = (this.server.address() as net.AddressInfo).port;
        r();
      }),
    );
  }

  /** Stops moving bytes on the connections open now; returns how many. */
  freeze(): number {
    for (const c of this.conns) c.frozen = true;
    return this.conns.size;
  }

  /** Drops everything (open and new connections) until called with false; the frozen connections are then reset. */
  blackhole(on: boolean): void {
    this.holed = on;
    if (on) this.freeze();
    else for (const c of this.conns) if (c.frozen) {
      c.a.destroy();
      c.b.destroy();
    }
  }

  cut(): void {
    for (const c of this.conns) {
      c.a.destroy();
      c.b.destroy();
    }
  }

  close(): Promise<void> {
    this.cut();
    return new Promise((r) => this.server.close(() => r()));
  }
}
