/**
 * A real OCI registry on loopback, for Tekton's bundles resolver: the
 * `registry` binary of github.com/distribution/distribution/v3 (built by
 * hack/platform/install.sh), serving plain HTTP at 127.0.0.1:PORT with its
 * storage in a directory of the environment.
 *
 * Plain HTTP works without any configuration of Tekton: go-containerregistry
 * (which the bundles resolver uses) speaks http to a registry named
 * 127.0.0.1:PORT or localhost:PORT (name.Registry.Scheme). That is a
 * loopback-and-tests-only arrangement; a real registry serves TLS.
 *
 * No authentication: the registry is open, and the resolver's keychain finds
 * no credentials (see docs/testing.md).
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { ensurePlatformBinaries } from './binaries.js';
import type { LogFn } from '../progress-log.js';
import { freePorts, ManagedProcess, waitUntilReady } from './processes.js';
import { digestOfTag, pushBundle, tagManifest, type BundleResource, type PushedBundle } from './oci.js';

export interface Registry {
  /** 127.0.0.1:PORT — the registry part of a reference (127.0.0.1:PORT/catalog/release:v1). */
  host: string;
  process: ManagedProcess;
  /** Milliseconds from startRegistry() until GET /v2/ answered 200 (binary lookup or build included). */
  startupMs: number;
  /** e.g. "v3.1.2" as the binary reports it. */
  version: string;
  /**
   * Pushes a Tekton bundle (one layer per resource) to `repository` (a path
   * in this registry, e.g. "catalog/release") under `tag`; pushing another
   * bundle to the same tag moves the tag.
   */
  pushBundle(repository: string, tag: string, resources: readonly BundleResource[]): Promise<PushedBundle>;
  /** Points `tag` of `repository` at an existing manifest (by digest). */
  tag(repository: string, tag: string, digest: string): Promise<void>;
  /** The digest `tag` of `repository` points at now (undefined: no such tag). */
  digestOf(repository: string, tag: string): Promise<string | undefined>;
  stop(): Promise<void>;
}

export interface StartRegistryOptions {
  /** Called whenever the process starts or exits (the environment's pid file). */
  onChange?: () => void;
  log?: LogFn;
  /** Give up waiting for the registry after this long (default 30 s; a build before it is not counted). */
  readyTimeoutMs?: number;
}

/** Starts the registry with its config, data and log under `dir`; resolves once GET /v2/ answers 200. */
export async function startRegistry(dir: string, opts: StartRegistryOptions = {}): Promise<Registry> {
  const started = Date.now();
  const log = opts.log ?? (() => {});
  const bins = await ensurePlatformBinaries('registry', opts.log);
  const bin = bins['registry'];
  if (!bin) throw new Error('hack/platform/install.sh reported no registry binary');
  mkdirSync(join(dir, 'data'), { recursive: true });
  const [port] = (await freePorts(1)) as [number];
  const host = `127.0.0.1:${port}`;
  const configPath = join(dir, 'config.yml');
  writeFileSync(
    configPath,
    stringify({
      version: 0.1,
      log: { level: 'info' },
      storage: { filesystem: { rootdirectory: join(dir, 'data') }, delete: { enabled: true } },
      // One instance: any secret will do; giving one keeps the log free of a warning.
      http: { addr: host, secret: randomBytes(16).toString('hex') },
    }),
  );
  const proc = new ManagedProcess('registry', bin, ['serve', configPath], join(dir, 'registry.log'), opts.onChange);
  const launched = Date.now();
  proc.start();
  try {
    await waitUntilReady(`the registry answering on http://${host}/v2/`, opts.readyTimeoutMs ?? 30_000, [proc], async () => {
      const res = await fetch(`http://${host}/v2/`);
      await res.arrayBuffer();
      return res.status === 200 ? true : `GET /v2/ answered ${res.status}`;
    }, 50);
  } catch (err) {
    await proc.stop(0);
    throw err;
  }
  const startupMs = Date.now() - started;
  const version = /registry-(v[^/]+)\//.exec(bin)?.[1] ?? 'unknown';
  log(`registry: distribution ${version} serving http://${host} after ${Date.now() - launched} ms (${startupMs} ms with the binary lookup); data in ${join(dir, 'data')}`);
  return {
    host,
    process: proc,
    startupMs,
    version,
    pushBundle: (repository, tag, resources) => pushBundle(`http://${host}`, repository, tag, resources),
    tag: (repository, tag, digest) => tagManifest(`http://${host}`, repository, tag, digest),
    digestOf: (repository, tag) => digestOfTag(`http://${host}`, repository, tag),
    stop: () => proc.stop(2000),
  };
}
