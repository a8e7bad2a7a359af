/**
 * The one-command local run (`internal-services local`, what `npm start`
 * runs) as a user runs it: a process that brings up the control planes,
 * starts the controller, submits the sample requests, prints their outcome,
 * stops everything and exits 0 when each ended as expected. The --results
 * tour is in local-results.test.ts (it waits for the platform's build, which
 * comes last in a cold npm test).
 *
 * Where a real node can start (root, Debian's containerd, runc, CNI plugins,
 * busybox), the demo runs its pods there and the results are what the
 * samples' scripts computed: checked here against sha256 and base64
 * computed by this test. Then the run with --simulated-pods checks the
 * fallback and how it is named; elsewhere both runs are the fallback.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { realNodeUnavailable } from '../../src/localenv/index.js';
import { CLI } from './helpers.js';
import { runLocalTour } from './local-tour.js';

const RUN_TIMEOUT_MS = 240_000;
const unavailable = realNodeUnavailable();
const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');
/** The sample request's image (config/samples) and the typed sample's fields (src/cli/local-typed.ts). */
const IMAGE = 'quay.io/example/app@sha256:4b0cbd1c3d2f1e0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a';
const TYPED_IMAGE = `quay.io/example/app@sha256:${'0123456789abcdef'.repeat(4)}`;
const esc = (s: string): string => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

for (const simulated of [false, true]) {
const real = !simulated && !unavailable;
const why = simulated ? '--simulated-pods was given' : unavailable ?? '';
test(`internal-services local${simulated ? ' --simulated-pods' : ''} runs the sample requests end to end and exits 0 (${real ? 'pods on the real node, results computed by the scripts' : `pods SIMULATED: ${why}`})`, { timeout: RUN_TIMEOUT_MS + 30_000 }, async () => {
  const proc = spawn(process.execPath, [CLI, 'local', ...(simulated ? ['--simulated-pods'] : [])], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  proc.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const started = Date.now();
  const timer = setTimeout(() => proc.kill('SIGINT'), RUN_TIMEOUT_MS);
  const code = await new Promise<number | string>((resolve) => proc.on('exit', (c, s) => resolve(c ?? s ?? -1)));
  clearTimeout(timer);
  const elapsed = Date.now() - started;
  const output = `--- stdout ---\n${stdout}\n--- stderr ---\n${stderr}`;

  assert.equal(code, 0, `exit ${String(code)} after ${elapsed} ms\n${output}`);
  assert.ok(elapsed < RUN_TIMEOUT_MS, `took ${elapsed} ms`);

  // Says where the pods run, in its first lines and beside every run; runs the controller as its CLI process.
  const where = real ? 'pods on the real node' : `pods SIMULATED (no real node: ${why})`;
  const head = stdout.split('\n').slice(0, 4).join('\n');
  if (real) assert.match(head, /Tekton is real \(its controller, resolvers and webhook\), and so are its pods: they run on a real node/);
  else assert.ok(head.includes(`Tekton is real (its controller, resolvers and webhook); only its pods are SIMULATED (no real node: ${why})`), head);
  assert.match(stdout, new RegExp(`Tekton v1\\.6\\.6 ready: controller, resolvers, webhook .*; ${esc(where)}`));
  if (real) assert.match(stdout, /real node internal-services-node \(10\.244\.77\.1\) Ready after \d+ ms; step image localhost\/internal-services\/node-shell:\S+/);
  const taskRuns = stdout.split('\n').filter((l) => l.includes('Tekton: TaskRun '));
  assert.ok(taskRuns.length > 0 && taskRuns.every((l) => l.includes(`-pod, ${where}): `) || l.includes(`(pod -, ${where}): `)), taskRuns.join('\n'));
  // Tekton's own TaskRun, with the exit codes and results it read from the pod.
  const signature = real ? `sha256:${sha256(IMAGE)}` : `signature:{"image":"${IMAGE}"}`;
  assert.match(stdout, new RegExp(`Tekton: TaskRun ir-[0-9a-f-]+-sign \\(pod ir-[0-9a-f-]+-sign-pod, ${esc(where)}\\): Succeeded: All Steps have completed executing — steps: sign exit 0 — results: log-index=${real ? '0' : 'log-index:\\{"image":"[^"]+"\\}'}, signature=${esc(signature)}`));
  assert.match(stdout, new RegExp(`Tekton: TaskRun ir-[0-9a-f-]+-sign \\(pod \\S+, ${esc(where)}\\): Failed: "step-sign" exited with code 1.* — steps: sign exit 1`));
  assert.match(stdout, /controller started \(pid \d+\)/);
  assert.match(stdout, /node \S*main\.js controller --remote-kubeconfig \S+ --kubeconfig \S+ --namespace internal-services --metrics-bind-address 127\.0\.0\.1:\d+ --health-probe-bind-address 127\.0\.0\.1:\d+/);
  assert.match(stdout, /controller ready/);

  // The four outcomes, each with its condition, message and results.
  const block = (name: string): string => {
    const i = stdout.indexOf(`InternalRequest ${name} `);
    assert.ok(i >= 0, `no outcome printed for ${name}\n${output}`);
    const rest = stdout.slice(stdout.lastIndexOf('\n', i) + 1);
    const end = rest.indexOf('\n\n');
    return end >= 0 ? rest.slice(0, end) : rest;
  };
  const ok = block('managed-team-1-tenant/sign-allowed');
  assert.match(ok, /Succeeded=True, reason Succeeded/);
  assert.match(ok, /message: +PipelineRun internal-services\/ir-[0-9a-f-]+ succeeded/);
  assert.ok(ok.includes(`signature = ${signature}\n`) || ok.endsWith(`signature = ${signature}`), ok);
  assert.match(ok, real ? /log-index = 0$/m : /log-index = log-index:/);
  assert.match(ok, real ? /computed by the step's script on the real node/ : new RegExp(`values come from the SIMULATED pod, derived from the params; ${esc(where)}`));

  const notAllowed = block('unlisted-tenant/sign-not-allowed');
  assert.match(notAllowed, /Succeeded=False, reason Rejected/);
  assert.match(notAllowed, /namespace "unlisted-tenant" on remote "default" is not on the allowList/);
  assert.match(notAllowed, /results: +\(none\)/);

  const missing = block('managed-team-1-tenant/missing-pipeline');
  assert.match(missing, /Succeeded=False, reason Rejected/);
  assert.match(missing, /no Pipeline named "no-such-pipeline"/);

  const fails = block('managed-team-1-tenant/sign-fails');
  assert.match(fails, /Succeeded=False, reason Failed/);
  assert.match(fails, /PipelineRun internal-services\/ir-[0-9a-f-]+ failed/);

  // Today's shape: a git-resolved Pipeline whose Task comes from $(params.taskGitUrl), from the local git daemon.
  const git = block('managed-team-1-tenant/sign-from-git');
  assert.match(git, /Succeeded=True, reason Succeeded/);
  assert.ok(git.includes(`signature = ${signature}`), git);
  assert.match(git, /a waiting requester read: (wait \(new\) → )?wait \(Resolving\)( → wait \(Resolving\))* → wait \(Running\) → SUCCESS/);
  assert.match(stdout, /managed-team-1-tenant\/sign-from-git: conditions\[0\]\.reason Running, phase Resolving: resolving the Pipeline .*=> a waiting requester keeps waiting/);
  // Waits for an approval, is approved with the kubectl plugin, runs.
  const approval = block('managed-approval-tenant/sign-with-approval');
  assert.match(approval, /Succeeded=True, reason Succeeded/);
  assert.match(approval, /a waiting requester read: (wait \(new\) → )?wait \(AwaitingApproval\) → wait \(Running\) → SUCCESS/);
  assert.match(stdout, /approving as "release-manager" on the internal cluster: kubectl internalrequest approve managed-approval-tenant\/sign-with-approval/);
  // Refused by the source policy before anything is fetched.
  const refused = block('managed-team-1-tenant/git-not-allowed');
  assert.match(refused, /Succeeded=False, reason Rejected/);
  assert.match(refused, /git url "https:\/\/github\.com\/someone-else\/catalog\.git" is not allowed by/);
  assert.match(refused, /a waiting requester read: (wait \(new\) → )?FAILURE/);

  assert.match(ok, /a waiting requester read: (wait \(new\) → )?wait \(Running\) → SUCCESS/);
  assert.match(fails, /a waiting requester read: (wait \(new\) → )?wait \(Running\) → FAILURE/);
  // The typed kind beside them: its fields, its outcome and only the results its definition names; a malformed one refused by the apiserver.
  const ti = stdout.lastIndexOf('SigningRequest managed-team-1-tenant/sign-typed —');
  assert.ok(ti >= 0, `no outcome printed for the SigningRequest\n${output}`);
  const typed = stdout.slice(stdout.lastIndexOf('\n', ti) + 1).split('\n\n')[0]!;
  assert.match(typed, /^\s*\[ok\]/, typed);
  assert.match(typed, /signer +object \{identity, keyRef\} +required +Which key signs/);
  assert.match(typed, /tags +\[\]string +optional/);
  assert.match(typed, /Succeeded=True, reason Succeeded/);
  if (real) {
    // printf '%s' "$IMAGE $*" | sha256sum | cut -d' ' -f1 | base64 -w0, over the image and the tags.
    const typedSignature = Buffer.from(`${sha256(`${TYPED_IMAGE} v1.0 stable`)}\n`).toString('base64');
    assert.ok(typed.includes(`signature = ${typedSignature}\n`), typed);
    assert.match(typed, /signed-by = release-bot with release-key$/m);
  } else {
    assert.ok(typed.includes(`signature = signature:{"image":"${TYPED_IMAGE}","key-ref":"release-key","identity":"release-bot"}`), typed);
    assert.ok(typed.includes(`signed-by = signed-by:{"image":"${TYPED_IMAGE}","key-ref":"release-key","identity":"release-bot"}`), typed);
  }
  assert.doesNotMatch(typed, /log = /);
  assert.match(stdout, /a malformed SigningRequest was refused by the remote apiserver before the controller could see it: .*spec\.tags/);
  for (const b of [ok, git, approval, refused, notAllowed, missing, fails]) assert.match(b, /^\s*\[ok\]/, b);
  assert.match(stdout, /All 8 requests ended as expected\./);
  assert.ok(stdout.includes(`Outcome of the sample requests (as the requester sees them on the remote cluster; ${where}):`), 'the outcome names where the pods ran');
  // Progress was shown while the requests ran, as the requester reads it.
  assert.match(stdout, /managed-team-1-tenant\/sign-allowed: conditions\[0\]\.reason Running: PipelineRun internal-services\/ir-[0-9a-f-]+ is running  => a waiting requester keeps waiting/);

  // Nothing is left behind: the controller process and the environment's directory are gone.
  const pid = Number(/controller started \(pid (\d+)\)/.exec(stdout)?.[1]);
  assert.ok(pid > 0 && !alive(pid), `controller pid ${pid} still alive`);
  const dir = /dir (\/\S+?)\)/.exec(stdout)?.[1];
  assert.ok(dir, 'environment directory not printed');
  assert.ok(!existsSync(dir), `${dir} still exists`);
});
}

test('internal-services local --kcp: three workspaces on two shards of a real sharded kcp, one kubeconfig; two allowed by path run, the third is Rejected naming its path; a tenant in root:team-a runs today\'s git-shaped request with kubectl create -f and no -n, and one created in "default" is Rejected naming the entry and the namespace to use; exits 0', { timeout: 420_000 }, async () => {
  const { code, stdout, output } = await runLocalTour(['--kcp'], 400_000);
  assert.equal(code, 0, output);
  // Its requests run on the real node where one can start: the signature is the sha256 the script computed.
  const where = unavailable ? `pods SIMULATED (no real node: ${unavailable})` : 'pods on the real node';
  assert.ok(stdout.includes(`the internal cluster with real Tekton (${where})`), stdout.slice(0, 600));
  assert.ok(stdout.includes(`Outcome, as each workspace's requester sees it (${where}):`), output);
  const signature = (image: string): RegExp => new RegExp(`result: +signature = ${esc(unavailable ? `signature:{"image":"${image}"}` : `sha256:${sha256(image)}`)}$`, 'm');
  const kcpImage = (who: string): string => IMAGE.replace('quay.io/example/app@', `quay.io/example/app-team-${who}@`);
  assert.match(stdout, /controller started with --kcp-kubeconfig \S+ \(the provider workspace, as user "internal-services-controller"\)/);
  assert.match(stdout, /workspace root:team-a on shard root binds the export/);
  assert.match(stdout, /workspace root:team-b on shard shard-1 binds the export/);
  assert.equal((stdout.match(/controller \/readyz: \[\+\]kcp\/appstudio\.redhat\.com\/shard\/127\.0\.0\.1:\d+ ok/g) ?? []).length, 2, 'both shards served');
  // The catalog is served and allowed (not only the sample's placeholder).
  assert.match(stdout, /git catalog git:\/\/127\.0\.0\.1:\d+\/release-catalog\.git \(git daemon on loopback\)/);
  assert.match(stdout, /sources\.git also allows \{"urls":\["git:\/\/127\.0\.0\.1:\d+\/release-catalog\.git"\]/);
  // Each outcome's block, from its "[ok]" line to the blank line after it.
  const block = (head: RegExp): string => {
    const m = head.exec(stdout);
    assert.ok(m, `no outcome ${String(head)}\n${output}`);
    const rest = stdout.slice(stdout.lastIndexOf('\n', m.index) + 1);
    const end = rest.indexOf('\n\n');
    return end >= 0 ? rest.slice(0, end) : rest;
  };
  for (const [ws, shard, who] of [['root:team-a', 'root', 'a'], ['root:team-b', 'shard-1', 'b']]) {
    const b = block(new RegExp(`\\] +${ws} \\(shard ${shard}\\) team/sign-release-1 — allowed by path`));
    assert.match(b, /^\s*\[ok\]/, b);
    assert.match(b, signature(kcpImage(who!)), b);
  }
  const c = block(/\] +root:team-c \(shard shard-1\) team\/sign-release-1 — binds the API but is not on the allowList/);
  assert.match(c, /^\s*\[ok\]/, c);
  assert.match(c, /message: +namespace "team" on remote "root:team-c" is not on the allowList of InternalServicesConfig internal-services\/config; ask the administrators of the internal cluster to add the entry "root:team-c\/team" to spec\.allowList; no namespace of remote "root:team-c" is served$/m, c);
  assert.doesNotMatch(c, /team-a|team-b/, "another workspace's entries are not shown");

  // Today's shape, created as the release tooling creates it: a file without a namespace, kubectl create -f, the kubeconfig's context naming "team".
  assert.match(stdout, /submitted root:team-a team\/sign-image-[a-z0-9]{5} \(today's shape, git resolver\): kubectl create -f \S+git-request\.yaml, no -n; the kubeconfig's context names namespace "team"/);
  const git = block(/\] +root:team-a \(shard root\) team\/sign-image-[a-z0-9]{5} — today's shape/);
  assert.match(git, /^\s*\[ok\]/, git);
  assert.match(git, /Succeeded=True, reason Succeeded/);
  assert.match(git, /pipeline: +git \S+release-catalog\.git pipelines\/internal\/sign-image\/sign-image\.yaml revision refs\/heads\/main, ran at sha1:[0-9a-f]{40}/, git);
  assert.match(git, signature(kcpImage('a')), git);
  // The same file with a kubeconfig naming no namespace: in "default", Rejected, naming the entry as written and the namespace to use.
  const stray = block(/\] +root:team-a \(shard root\) default\/sign-image-[a-z0-9]{5} — the same file/);
  assert.match(stray, /^\s*\[ok\]/, stray);
  assert.match(stray, /Succeeded=False, reason Rejected/);
  assert.match(stray, /message: +namespace "default" on remote "root:team-a" is not on the allowList of InternalServicesConfig internal-services\/config; ask the administrators of the internal cluster to add the entry "root:team-a\/default" to spec\.allowList; requests of remote "root:team-a" are served in namespace "team"$/m, stray);
  assert.doesNotMatch(stray, /team-b|team-c/, "another workspace's entries are not shown");
  assert.match(stdout, /All 5 requests ended as expected\./);
});
