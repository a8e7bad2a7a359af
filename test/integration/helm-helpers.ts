/**
 * What the chart tests (helm.test.ts for charts/internal-services,
 * helm-remote.test.ts for charts/internal-services-remote) share: running a
 * process, the real helm binary of hack/helm/install.sh with directories of
 * its own, kubectl, and reading rendered YAML.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { repoRoot } from '../../src/util/repo.js';

export type Obj = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [k: string]: any;
};
export type Values = Record<string, unknown>;

export const ROOT = repoRoot();

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command in the repository root; never rejects on a non-zero exit (the caller looks at `code`). */
export function run(cmd: string, args: string[], opts: { input?: string; env?: NodeJS.ProcessEnv; onStderrLine?: (l: string) => void } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, args, { cwd: ROOT, env: { ...process.env, ...opts.env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let partial = '';
    p.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    p.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
      if (opts.onStderrLine) {
        partial += d.toString();
        let i: number;
        while ((i = partial.indexOf('\n')) >= 0) {
          opts.onStderrLine(partial.slice(0, i));
          partial = partial.slice(i + 1);
        }
      }
    });
    p.on('error', reject);
    p.on('close', (code) => resolve({ code, stdout, stderr }));
    // A command that exits without reading its stdin (helm lint) closes the
    // pipe first: the write then fails with EPIPE, which is no error of the run.
    p.stdin.on('error', () => {});
    p.stdin.end(opts.input ?? '');
  });
}

/** hack/helm/install.sh: the cached helm, or one built now from its Go module. */
export async function installHelm(): Promise<string> {
  const script = join(ROOT, 'hack', 'helm', 'install.sh');
  const started = Date.now();
  const r = await run('bash', [script], { onStderrLine: (l) => process.stderr.write(`${l}\n`) });
  if (r.code !== 0) {
    throw new Error(`${script} failed (exit code ${String(r.code)}), so there is no helm to test the chart with. It builds helm from the Go module helm.sh/helm/v3 with the machine's Go toolchain (or set HELM_BINARY to a helm v3). Its output:\n${r.stderr.slice(-4000)}`);
  }
  const path = r.stdout.trim().split('\n').pop() ?? '';
  if (!path || !existsSync(path)) throw new Error(`${script} printed no usable helm path (stdout: ${JSON.stringify(r.stdout)})`);
  const seconds = (Date.now() - started) / 1000;
  if (seconds > 5) console.log(`helm ready in ${seconds.toFixed(0)} s (${path})`);
  return path;
}

/** A helm binary with its own cache/config/data directories under `dir` (nothing of the user's is read or written). */
export class Helm {
  private values = 0;

  constructor(
    readonly path: string,
    private readonly dir: string,
  ) {
    mkdirSync(dir, { recursive: true });
  }

  run(args: string[], extraEnv: NodeJS.ProcessEnv = {}): Promise<Run> {
    return run(this.path, args, {
      env: { HELM_CACHE_HOME: join(this.dir, 'helm-cache'), HELM_CONFIG_HOME: join(this.dir, 'helm-config'), HELM_DATA_HOME: join(this.dir, 'helm-data'), ...extraEnv },
    });
  }

  /** Runs helm and asserts it succeeded; its stdout. */
  async ok(args: string[]): Promise<string> {
    const r = await this.run(args);
    assert.equal(r.code, 0, `helm ${args.join(' ')} failed:\n${r.stderr}\n${r.stdout}`);
    return r.stdout;
  }

  /** Writes values to a fresh file (JSON, which is YAML) for --values. */
  valuesFile(values: Values): string {
    const f = join(this.dir, `values-${++this.values}.json`);
    writeFileSync(f, JSON.stringify(values));
    return f;
  }
}

/** Runs kubectl and asserts it succeeded; its stdout. */
export async function kubectlOk(kubectl: string, args: string[], input?: string): Promise<string> {
  const r = await run(kubectl, args, input === undefined ? {} : { input });
  assert.equal(r.code, 0, `kubectl ${args.join(' ')} failed:\n${r.stderr}\n${r.stdout}`);
  return r.stdout;
}

/** The objects of a multi-document YAML stream (empty documents dropped). */
export function parseDocs(yaml: string): Obj[] {
  return parseAllDocuments(yaml)
    .map((d) => {
      assert.deepEqual(d.errors, [], 'rendered YAML parses');
      return d.toJS() as Obj | null;
    })
    .filter((o): o is Obj => o !== null && o !== undefined);
}

export function find(objects: Obj[], kind: string, name?: string): Obj {
  const o = objects.find((x) => x.kind === kind && (name === undefined || x.metadata.name === name));
  assert.ok(o, `${kind} ${name ?? ''} not rendered; have: ${objects.map((x) => `${x.kind}/${x.metadata.name}`).join(', ')}`);
  return o;
}

/** `Kind/name` of each object, sorted. */
export const kindsOf = (objects: Obj[]): string[] => objects.map((o) => `${o.kind}/${o.metadata.name}`).sort();
