/**
 * The controller's container image, built and run as CI can: buildah with
 * vfs storage and chroot isolation, no daemon (hack/image/build.sh; the base
 * is CI's stand-in for node:26-trixie-slim, see docs/image.md).
 *
 *  1. builds the image from the Dockerfile (timed; the stand-in base comes
 *     from buildah's store or its cached archive when its recipe is
 *     unchanged);
 *  2. looks inside it: user 1000, nothing but the bundle in /app, no
 *     node_modules there, no TypeScript, esbuild or test files anywhere;
 *     prints its size;
 *  3. runs it as a pod would on the test harness's real control planes with
 *     real Tekton (pods simulated): the controller with the Deployment's
 *     command and args (config/manager/manager.yaml), its in-cluster
 *     ServiceAccount for the internal cluster and the mounted remote
 *     kubeconfig; then the requester CLI exactly as the step of
 *     tasks/internal-request.yaml runs it, with the Task's params
 *     substituted, in-cluster on the remote cluster. The request goes end to
 *     end and the Task's result files hold what the Pipeline returned.
 *
 * Each run uses `buildah run` with host networking, no capabilities, the
 * image's own user, and a read-only root filesystem. buildah run has no
 * --read-only flag; a container runtime makes a read-only root by creating
 * the volume mount points in the container's layer and then remounting its
 * root read-only, and that is what runInImage() does: it creates them in the
 * working container, then bind-mounts the container's root over itself
 * read-only in a private mount namespace (unshare) before buildah run, whose
 * chroot inherits that read-only mount. One difference from a pod: /run is a
 * 1 MB tmpfs (root-owned, so not writable by the user either), because
 * buildah 1.28 removes its /run/.containerenv after each run and panics when
 * it cannot. The test checks the result from the outside (/proc of the
 * controller's process: uid, gid, capabilities, "/" mounted ro) and from the
 * inside (writes to /, /app, /etc, /usr, $HOME fail with EROFS).
 */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import {
  startEnvironment,
  type Environment,
  type Identity,
  applyObjects,
  grantRequester,
  installProject,
  freePorts,
} from '../../src/localenv/index.js';
import { repoRoot } from '../../src/util/repo.js';
import type { PipelineRun } from '../../src/tekton/tekton-types.js';
import { api, getRequest, messageOf, NS, PR, reasonOf, sample, setRunConfig, simulatedStep, testPipeline, waitFor } from './helpers.js';

const ROOT = repoRoot();
const BUILDAH = join(ROOT, 'hack', 'image', 'buildah.sh');
const TAG = 'localhost/internal-services:test';
const TENANT = 'team-a';
const UID = 1000;

interface Result { code: number | null; stdout: string; stderr: string }

function run(cmd: string, args: string[], opts: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}): Promise<Result> {
  return new Promise((resolve) => {
    execFile(cmd, args, { maxBuffer: 64 << 20, timeout: opts.timeoutMs ?? 120_000, env: { ...process.env, ...opts.env } }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : null) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

async function buildah(args: string[], timeoutMs?: number): Promise<string> {
  const r = await run(BUILDAH, args, timeoutMs === undefined ? {} : { timeoutMs });
  if (r.code !== 0) throw new Error(`buildah ${args.join(' ')} exited ${r.code}: ${r.stderr.trim()}`);
  return r.stdout.trim();
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const megabytes = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`;

// --- working containers and running commands in them ---

interface Container { id: string; rootfs: string }
const containers: Container[] = [];
const scratch: string[] = [];

async function newContainer(name: string): Promise<Container> {
  await run(BUILDAH, ['rm', name]);
  const id = await buildah(['from', '--pull-never', '--name', name, TAG]);
  const rootfs = await buildah(['mount', id]);
  const c = { id, rootfs };
  containers.push(c);
  return c;
}

function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), `internal-services-image-${prefix}-`));
  scratch.push(d);
  return d;
}

/** Files as a Secret volume with fsGroup 1000 gives them: root-owned, group 1000, mode 0440. */
function secretVolume(prefix: string, files: Record<string, string>): string {
  const d = tempDir(prefix);
  chmodSync(d, 0o755);
  for (const [name, content] of Object.entries(files)) {
    writeFileSync(join(d, name), content, { mode: 0o440 });
    chownSync(join(d, name), 0, UID);
  }
  return d;
}

/** A writable volume (an emptyDir) owned by the image's user. */
function emptyDir(prefix: string): string {
  const d = tempDir(prefix);
  chownSync(d, UID, UID);
  return d;
}

interface RunSpec {
  args: string[];
  env?: Record<string, string>;
  /** [host path, path in the container, 'ro' | 'rw'] */
  volumes?: Array<[string, string, 'ro' | 'rw']>;
}

function buildahRunArgs(c: Container, spec: RunSpec, args: string[]): string[] {
  return [
    'run', '--isolation', 'chroot', '--network', 'host', '--cap-drop', 'all',
    ...Object.entries(spec.env ?? {}).flatMap(([k, v]) => ['--env', `${k}=${v}`]),
    ...(spec.volumes ?? []).flatMap(([host, target, mode]) => ['--volume', `${host}:${target}:${mode}`]),
    c.id, '--', ...args,
  ];
}

/**
 * Starts `buildah run` in the container as a pod's container would run:
 * host network, no capabilities, the image's user, read-only root (see the
 * file's comment), the given volumes.
 */
function runInImage(c: Container, spec: RunSpec): ChildProcess {
  // What a runtime does before it makes the root read-only: the mount points
  // (the volumes', and the files buildah binds: /etc/hosts, /etc/resolv.conf)
  // made in the container's own layer, never in the image.
  for (const [, target] of spec.volumes ?? []) mkdirSync(join(c.rootfs, target), { recursive: true });
  for (const file of ['etc/hosts', 'etc/resolv.conf']) if (!existsSync(join(c.rootfs, file))) writeFileSync(join(c.rootfs, file), '');
  // The root read-only, then a small tmpfs on /run: after every run buildah
  // 1.28 unlinks the /run/.containerenv it bound there, and on a read-only
  // /run that fails and buildah panics, losing the command's exit code.
  const script = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && mount -t tmpfs -o mode=0755,size=1m tmpfs "$0/run" && exec "$@"';
  return spawn('unshare', ['--mount', '--propagation', 'private', '--', 'sh', '-c', script, c.rootfs, BUILDAH, ...buildahRunArgs(c, spec, spec.args)], { stdio: ['ignore', 'pipe', 'pipe'] });
}

async function runToEnd(c: Container, spec: RunSpec, timeoutMs = 120_000): Promise<Result> {
  const p = runInImage(c, spec);
  let stdout = '';
  let stderr = '';
  p.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  p.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
  const code = await new Promise<number | null>((resolve) => p.on('exit', (c2) => resolve(c2)));
  clearTimeout(timer);
  return { code, stdout, stderr };
}

/** The processes below pid (children, grandchildren, …), from /proc. */
function descendants(pid: number): number[] {
  const parent = new Map<number, number>();
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      parent.set(Number(e), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // gone
    }
  }
  const out: number[] = [];
  const queue = [pid];
  while (queue.length) {
    const p = queue.shift()!;
    for (const [child, pp] of parent) if (pp === p) (out.push(child), queue.push(child));
  }
  return out;
}

// --- the image, built once ---

let built: { id: string; ms: number } | undefined;
const notBuilt = 'the image was not built (see the first test)';

test('the image builds from the Dockerfile with buildah (vfs, chroot isolation, no daemon)', { timeout: 40 * 60_000 }, async () => {
  const which = await run('sh', ['-c', 'command -v buildah']);
  assert.equal(which.code, 0, 'buildah is not installed: the image test needs it (Debian: apt-get install buildah debootstrap; .ci/run installs both)');
  const t0 = Date.now();
  const r = await run('bash', [join(ROOT, 'hack', 'image', 'build.sh'), '--tag', TAG], { timeoutMs: 40 * 60_000 });
  const ms = Date.now() - t0;
  assert.equal(r.code, 0, `hack/image/build.sh failed:\n${r.stderr.slice(-4000)}`);
  for (const line of r.stdout.split('\n').filter((l) => l.startsWith('image:'))) console.log(`# ${line}`);
  console.log(`# image: hack/image/build.sh took ${seconds(ms)}`);
  const id = await buildah(['inspect', '--type', 'image', '--format', '{{.FromImageID}}', TAG]);
  assert.match(id, /^[0-9a-f]{64}$/);
  built = { id, ms };
});

test('the image runs as user 1000 and holds the bundle only: no node_modules in /app, no dev dependencies, no tests', async () => {
  assert.ok(built, notBuilt);
  const config = JSON.parse(await buildah(['inspect', '--type', 'image', TAG])) as { OCIv1: { config: { User?: string; Entrypoint?: string[]; WorkingDir?: string } } };
  assert.equal(config.OCIv1.config.User, `${UID}:${UID}`, 'USER of the image');
  assert.equal(config.OCIv1.config.WorkingDir, '/app');

  const c = await newContainer('internal-services-image-test-inspect');
  // /app is the bundle and its source maps, nothing else.
  const app: string[] = [];
  const walk = (dir: string, rel: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(join(dir, e.name), r);
      else app.push(r);
    }
  };
  walk(join(c.rootfs, 'app'), '');
  // Beside them, Node.js's compile cache of the bundles (the Dockerfile's NODE_COMPILE_CACHE), readable by everyone and written by nobody at run time.
  const cache = app.filter((f) => f.startsWith('.node-compile-cache/'));
  assert.deepEqual(
    app.filter((f) => !/^dist\/bundle\/[a-z-]+\.mjs(\.map)?$/.test(f) && !cache.includes(f)),
    [],
    `/app should hold dist/bundle/*.mjs, their maps and the compile cache only; it has ${app.join(', ')}`,
  );
  assert.ok(cache.length >= 2, `the compile cache holds an entry per bundle: ${cache.join(', ') || 'none'}`);
  for (const f of cache) {
    const mode = lstatSync(join(c.rootfs, 'app', f)).mode;
    assert.equal(mode & 0o044, 0o044, `${f} readable by the image's user (mode ${(mode & 0o777).toString(8)})`);
    assert.equal(mode & 0o022, 0, `${f} writable by its owner only (mode ${(mode & 0o777).toString(8)})`);
  }
  assert.ok(app.includes('dist/bundle/internal-services.mjs') && app.includes('dist/bundle/kubectl-internalrequest.mjs'), `the bundle is missing from /app: ${app.join(', ')}`);

  // Anywhere in the image: no node_modules but npm's own, no TypeScript,
  // esbuild or type packages, no test files, no TypeScript sources, no
  // package downloads (.deb) left behind by apt.
  const nodeModules: string[] = [];
  const offending: string[] = [];
  const scan = (dir: string, rel: string): void => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return; // unreadable or vanished: not part of what we look for
    }
    for (const e of entries) {
      const r = `${rel}/${e.name}`;
      if (e.isDirectory()) {
        if (e.name === 'node_modules' && !r.startsWith('/usr/local/lib/node_modules/npm/')) nodeModules.push(r);
        const isPackage = rel.endsWith('/node_modules') || /\/node_modules\/@[^/]+$/.test(rel);
        if (isPackage && ['typescript', 'esbuild', '@esbuild', '@types', 'tsx', 'ts-node'].includes(e.name)) offending.push(r);
        if (r === '/app/test' || r === '/app/src' || r === '/app/bench') offending.push(r);
        if (['/proc', '/sys', '/dev'].includes(r)) continue;
        scan(join(dir, e.name), r);
      } else if (/\.test\.(js|mjs|ts)$/.test(e.name) || (r.startsWith('/app/') && /\.ts$/.test(e.name)) || e.name.endsWith('.deb')) {
        offending.push(r);
      }
    }
  };
  scan(c.rootfs, '');
  assert.deepEqual(nodeModules, ['/usr/local/lib/node_modules'], `node_modules directories besides the base image's npm: ${nodeModules.join(', ')}`);
  assert.deepEqual(offending, [], `dev dependencies, test files or downloaded packages in the image: ${offending.join(', ')}`);

  // The requester CLI is on PATH, as tasks/internal-request.yaml expects.
  for (const bin of ['internal-services', 'kubectl-internalrequest']) {
    const link = join(c.rootfs, 'usr/local/bin', bin);
    assert.ok(lstatSync(link).isSymbolicLink(), `/usr/local/bin/${bin}`);
    assert.match(readlinkSync(link), /^\/app\/dist\/bundle\/.*\.mjs$/);
  }

  // Sizes: as stored here (uncompressed, with the base) and as a registry
  // would hold it (gzip-compressed layers, what a node pulls).
  const stored = (await buildah(['images', '--no-trunc', '--format', '{{.ID}} {{.Size}}'])).split('\n').map((l) => /^(?:sha256:)?(\S+)\s+(.+)$/.exec(l.trim()));
  const size = stored.find((m) => m?.[1] === built!.id)?.[2];
  assert.ok(size, `image ${built.id} not in buildah images`);
  const layout = tempDir('oci');
  await buildah(['push', '--quiet', TAG, `oci:${layout}`]);
  const index = JSON.parse(readFileSync(join(layout, 'index.json'), 'utf8')) as { manifests: Array<{ digest: string }> };
  const blob = (digest: string) => join(layout, 'blobs', ...digest.split(':'));
  const manifest = JSON.parse(readFileSync(blob(index.manifests[0]!.digest), 'utf8')) as { layers: Array<{ size: number }> };
  const layers = manifest.layers.map((l) => l.size);
  const bundleBytes = app.filter((f) => f.endsWith('.mjs')).reduce((a, f) => a + lstatSync(join(c.rootfs, 'app', f)).size, 0);
  console.log(`# image: ${TAG} is ${size} uncompressed; ${megabytes(layers.reduce((a, b) => a + b, 0))} compressed in ${layers.length} layers ` +
    `(${layers.map(megabytes).join(' + ')}: the base, then the app); the bundle is ${megabytes(bundleBytes)} without source maps`);
});

test('the image runs by its ENTRYPOINT as user 1000 on a read-only root', async () => {
  assert.ok(built, notBuilt);
  const c = await newContainer('internal-services-image-test-probe');
  const config = JSON.parse(await buildah(['inspect', '--type', 'image', TAG])) as { OCIv1: { config: { Entrypoint?: string[] } } };
  const entrypoint = config.OCIv1.config.Entrypoint ?? [];
  assert.ok(entrypoint.length > 0, 'the image has no ENTRYPOINT');
  // NODE_DEBUG_NATIVE=COMPILE_CACHE: Node.js says which cache it read and whether V8 took it.
  const help = await runToEnd(c, { args: [...entrypoint, '--help'], env: { NODE_DEBUG_NATIVE: 'COMPILE_CACHE' } });
  assert.equal(help.code, 0, `ENTRYPOINT --help: ${help.stderr}`);
  assert.match(help.stdout, /controller/);
  assert.match(help.stderr, /V8 code cache for ESM file:\/\/\/app\/dist\/bundle\/internal-services\.mjs was accepted/, `the image's compile cache is used on a read-only root:\n${help.stderr}`);
  const probe = await runToEnd(c, {
    args: ['node', '-e', `
      const fs = require('node:fs');
      const write = (p) => { try { fs.writeFileSync(p, 'x'); return 'writable'; } catch (e) { return e.code; } };
      const root = [...new Set(['/app/probe', '/etc/probe', '/usr/local/bin/probe', '/home/node/probe', '/probe'].map(write))].join();
      const tmp = write('/tmp/probe');
      console.log(JSON.stringify({ uid: process.getuid(), gid: process.getgid(), node: process.versions.node, root, tmp }));`],
    volumes: [[emptyDir('tmp'), '/tmp', 'rw']],
  });
  assert.equal(probe.code, 0, probe.stderr);
  const seen = JSON.parse(probe.stdout.trim().split('\n').pop()!) as { uid: number; gid: number; node: string; root: string; tmp: string };
  assert.deepEqual({ uid: seen.uid, gid: seen.gid, root: seen.root, tmp: seen.tmp }, { uid: UID, gid: UID, root: 'EROFS', tmp: 'writable' });
  assert.match(seen.node, /^26\./, 'Node.js 26 (the Active LTS line), as the default base');
  // git: the controller checks commits asked for by SHA in a clone of its own (src/git/commit-checker.ts).
  const git = await runToEnd(c, { args: ['git', '--version'] });
  assert.equal(git.code, 0, `git in the image: ${git.stderr}`);
  assert.match(git.stdout, /^git version 2\./);
});

// --- end to end on the real control planes ---

let env: Environment | undefined;
const running: ChildProcess[] = [];

/** A Node.js process's name in /proc/PID/comm: "node", or "node-MainThread" from Node.js 26 on (it names its main thread). */
function isNodeComm(comm: string): boolean {
  return /^node(-MainThread)?$/.test(comm.trim());
}

after(async () => {
  // A controller still running (a failed test): SIGTERM to its node process
  // lets buildah clean up after it; SIGKILL to buildah if that is not enough.
  for (const p of running) {
    if (p.exitCode !== null || p.signalCode !== null) continue;
    const exited = new Promise((resolve) => p.on('exit', resolve));
    for (const pid of descendants(p.pid!)) {
      try {
        if (isNodeComm(readFileSync(`/proc/${pid}/comm`, 'utf8'))) process.kill(pid, 'SIGTERM');
      } catch {
        // gone already
      }
    }
    await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
    if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  }
  for (const c of containers) await run(BUILDAH, ['rm', c.id]);
  await env?.stop();
  for (const d of scratch) rmSync(d, { recursive: true, force: true });
});

/** A ServiceAccount volume as the kubelet mounts it, and the env that goes with it. */
function serviceAccount(prefix: string, url: string, caPem: string, id: Identity, namespace: string): { dir: string; env: Record<string, string> } {
  const dir = secretVolume(prefix, { token: id.token, 'ca.crt': caPem, namespace });
  const u = new URL(url);
  return { dir, env: { KUBERNETES_SERVICE_HOST: u.hostname, KUBERNETES_SERVICE_PORT: u.port } };
}

// Where the kubelet mounts a ServiceAccount, /var/run/secrets/…, with the
// image's symlink /var/run -> /run resolved (buildah does not bind through it
// onto the /run tmpfs).
const SA_PATH = '/run/secrets/kubernetes.io/serviceaccount';

test('the controller from the image serves a request on real Tekton, and the Task runs the requester CLI from the image', { timeout: 10 * 60_000 }, async () => {
  assert.ok(built, notBuilt);
  env = await startEnvironment({ tekton: true });
  await installProject(env);
  await grantRequester(env, TENANT);
  const internalAdmin = env.internal.identities.admin.kubeConfig();
  await applyObjects(internalAdmin, [testPipeline('echo', {
    params: [{ name: 'text', type: 'string' }],
    results: [{ name: 'out', value: '$(tasks.t.results.out)' }],
    tasks: [{ name: 't', params: [{ name: 'text', value: '$(params.text)' }], taskSpec: {
      params: [{ name: 'text' }], results: [{ name: 'out' }],
      steps: [simulatedStep('echo', { SIMULATED_RESULT_out: 'echo:$(params.text)' })] } }],
  })] as never);
  // debug: the controller keeps finished PipelineRuns, for the test to read.
  await setRunConfig(internalAdmin, { allowList: [TENANT], debug: true });

  // The Deployment's container, from config/manager/manager.yaml.
  const deployment = parseYaml(readFileSync(join(ROOT, 'config', 'manager', 'manager.yaml'), 'utf8')) as {
    spec: { template: { spec: { containers: Array<{ command?: string[]; args?: string[]; volumeMounts?: Array<{ mountPath: string }> }> } } };
  };
  const manager = deployment.spec.template.spec.containers[0]!;
  const [metricsPort, healthPort] = (await freePorts(2)) as [number, number];
  // Its ports on loopback: this machine's 8080 and 8081 may be taken (host network).
  const args = (manager.args ?? []).map((a) =>
    a.startsWith('--metrics-bind-address') ? `--metrics-bind-address=127.0.0.1:${metricsPort}` :
    a.startsWith('--health-probe-bind-address') ? `--health-probe-bind-address=127.0.0.1:${healthPort}` : a);
  const remoteFlag = args.find((a) => a.startsWith('--remote-kubeconfig='));
  assert.ok(remoteFlag, 'the Deployment passes --remote-kubeconfig=PATH');
  const remoteKubeconfigPath = remoteFlag.slice('--remote-kubeconfig='.length);
  const remoteMount = remoteKubeconfigPath.slice(0, remoteKubeconfigPath.lastIndexOf('/'));
  assert.ok((manager.volumeMounts ?? []).some((m) => m.mountPath === remoteMount), `the Deployment mounts ${remoteMount}`);

  const remoteSecret = secretVolume('remote', { [remoteKubeconfigPath.slice(remoteMount.length + 1)]: readFileSync(env.remote.identities.controller.kubeconfigPath, 'utf8') });
  const sa = serviceAccount('controller-sa', env.internal.url, env.internal.caPem, env.internal.identities.controller, NS);
  const c = await newContainer('internal-services-image-test-controller');
  const proc = runInImage(c, {
    args: [...(manager.command ?? []), ...args],
    env: { ...sa.env, POD_NAMESPACE: NS, POD_NAME: 'internal-services-controller-image-test' },
    volumes: [[remoteSecret, remoteMount, 'ro'], [sa.dir, SA_PATH, 'ro'], [emptyDir('tmp'), '/tmp', 'rw']],
  });
  running.push(proc);
  let output = '';
  proc.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const logged = (msg: string) => output.split('\n').some((l) => l.includes(`"msg":"${msg}"`));
  const t0 = Date.now();
  await waitFor('the controller in the image to start its workers', async () => {
    if (proc.exitCode !== null) throw new Error(`exited ${proc.exitCode}:\n${output.slice(-3000)}`);
    return logged('caches synced');
  }, 60_000, 200).catch((e: Error) => assert.fail(`${e.message}\n${output.slice(-3000)}`));
  console.log(`# image: controller ready in ${seconds(Date.now() - t0)} after buildah run`);
  assert.ok(logged('became leader'), 'the controller took the Lease (--leader-elect from the Deployment)');
  assert.equal((await fetch(`http://127.0.0.1:${healthPort}/readyz`)).status, 200, '/readyz');

  // From the outside: the controller's process in its chroot.
  const node = descendants(proc.pid!).find((p) => {
    try {
      // node itself (buildah-chroot-exec, its parent, has the same arguments).
      return isNodeComm(readFileSync(`/proc/${p}/comm`, 'utf8')) && readFileSync(`/proc/${p}/cmdline`, 'utf8').includes('internal-services.mjs');
    } catch {
      return false;
    }
  });
  assert.ok(node, 'the controller process under buildah run');
  assert.notEqual(readlinkSync(`/proc/${node}/root`), '/', 'the controller runs in the container\'s root, not the host\'s');
  const status = readFileSync(`/proc/${node}/status`, 'utf8');
  assert.match(status, new RegExp(`^Uid:\\s+${UID}\\s+${UID}\\s+${UID}\\s+${UID}$`, 'm'), 'runs as uid 1000');
  assert.match(status, new RegExp(`^Gid:\\s+${UID}\\s+${UID}\\s+${UID}\\s+${UID}$`, 'm'), 'runs as gid 1000');
  assert.match(status, /^CapEff:\s+0+$/m, 'no capabilities');
  const rootMount = readFileSync(`/proc/${node}/mountinfo`, 'utf8').split('\n').map((l) => l.split(' ')).find((f) => f[4] === '/');
  assert.ok(rootMount, 'a mount on / in the process\'s mountinfo');
  assert.ok(rootMount[5]!.split(',').includes('ro'), `/ is mounted ${rootMount[5]}`);

  // The requester CLI, as the step of tasks/internal-request.yaml runs it.
  const task = parseYaml(readFileSync(join(ROOT, 'tasks', 'internal-request.yaml'), 'utf8')) as {
    spec: { params: Array<{ name: string; default?: string | string[] }>; results: Array<{ name: string }>; steps: Array<{ command?: string[]; args?: string[] }> };
  };
  const params: Record<string, string | string[]> = Object.fromEntries(task.spec.params.map((p) => [p.name, p.default ?? '']));
  Object.assign(params, { pipeline: 'echo', params: ['text=from the image'], timeout: '3m', idempotencyKey: '' });
  const step = task.spec.steps[0]!;
  const substitute = (s: string): string[] => {
    const array = /^\$\(params\.([A-Za-z]+)\[\*\]\)$/.exec(s);
    if (array) return params[array[1]!] as string[];
    return [s
      .replace(/\$\(context\.taskRun\.namespace\)/g, TENANT)
      .replace(/\$\(results\.([A-Za-z]+)\.path\)/g, (_, r: string) => `/tekton/results/${r}`)
      .replace(/\$\(params\.([A-Za-z]+)\)/g, (_, p: string) => {
        assert.ok(p in params, `the Task has no param ${p}`);
        return String(params[p]);
      })];
  };
  const argv = [...(step.command ?? []), ...(step.args ?? [])].flatMap(substitute);
  assert.ok(!argv.some((a) => a.includes('$(')), `unsubstituted: ${argv.join(' ')}`);
  const results = emptyDir('results');
  const requesterSa = serviceAccount('requester-sa', env.remote.url, env.remote.caPem, env.remote.identities.requester!, TENANT);
  const cli = await newContainer('internal-services-image-test-requester');
  const t1 = Date.now();
  const step1 = await runToEnd(cli, { args: argv, env: requesterSa.env, volumes: [[requesterSa.dir, SA_PATH, 'ro'], [results, '/tekton/results', 'rw']] }, 4 * 60_000);
  assert.equal(step1.code, 0, `the Task's step exited ${step1.code}:\n${step1.stderr.slice(-3000)}\ncontroller:\n${output.slice(-3000)}`);
  console.log(`# image: the Task's step (internal-services request create) finished in ${seconds(Date.now() - t1)}`);
  for (const r of task.spec.results) assert.ok(existsSync(join(results, r.name)), `Task result ${r.name} written`);
  const requestName = readFileSync(join(results, 'requestName'), 'utf8').trim();
  assert.deepEqual(JSON.parse(readFileSync(join(results, 'results'), 'utf8')), { out: 'echo:from the image' });

  // The request on the remote cluster, served by the controller in the image through real Tekton.
  const request = await getRequest(env.remote.identities.admin.kubeConfig(), TENANT, requestName);
  assert.equal(reasonOf(request), 'Succeeded', messageOf(request));
  assert.deepEqual(request.status?.results, { out: 'echo:from the image' });
  assert.equal(request.status?.pipelineRun, `${NS}/ir-${request.metadata?.uid}`);
  // Run by Tekton: its PipelineRun succeeded through a TaskRun.
  const pr = (await api(internalAdmin).getNamespacedCustomObject({ ...PR, namespace: NS, name: `ir-${request.metadata?.uid}` })) as PipelineRun;
  assert.equal(pr.status?.conditions?.[0]?.status, 'True', JSON.stringify(pr.status?.conditions));
  assert.ok((pr.status?.childReferences ?? []).some((r) => r.kind === 'TaskRun'), 'the PipelineRun ran a TaskRun');
  const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  assert.ok((sample(metrics, 'internal_request_attempt_total') ?? 0) >= 1, 'internal_request_attempt_total counts the request');

  // SIGTERM, as a runtime sends it to a pod's process on deletion: the
  // controller stops cleanly and buildah run hands back its exit code 0.
  // (Sent to the process itself: buildah 1.28's chroot isolation passes no
  // signal on; SIGTERM to buildah run ends in a SIGKILL of its process.)
  const t2 = Date.now();
  const exited = new Promise<number | null>((resolve) => (proc.exitCode !== null ? resolve(proc.exitCode) : proc.on('exit', (c2) => resolve(c2))));
  process.kill(node, 'SIGTERM');
  const code = await exited;
  assert.equal(code, 0, `exit code after SIGTERM:\n${output.slice(-2000)}`);
  console.log(`# image: controller stopped ${seconds(Date.now() - t2)} after SIGTERM`);
});
