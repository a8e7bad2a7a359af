/**
 * The one-command local run (`internal-services local`, what `npm start`
 * runs) as a user runs it: a process that brings up the control planes,
 * starts the controller, submits the sample requests, prints their outcome,
 * stops everything and exits 0 when each ended as expected. The --results
 * tour is in local-results.test.ts (it waits for the platform's build, which
 * comes last in a cold npm test).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { CLI } from './helpers.js';
import { runLocalTour } from './local-tour.js';

const RUN_TIMEOUT_MS = 120_000;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

test('internal-services local runs the sample requests end to end and exits 0', { timeout: RUN_TIMEOUT_MS + 30_000 }, async () => {
  const proc = spawn(process.execPath, [CLI, 'local'], { stdio: ['ignore', 'pipe', 'pipe'] });
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

  // Says Tekton is real and only its pods are simulated; runs the controller as its CLI process.
  assert.match(stdout, /Tekton is real \(its controller, resolvers and webhook\); only its pods are SIMULATED/);
  assert.match(stdout, /Tekton v1\.6\.6 ready: controller, resolvers, webhook/);
  // Tekton's own TaskRun, with the results it read from the (simulated) pod.
  assert.match(stdout, /Tekton: TaskRun ir-[0-9a-f-]+-sign \(pod ir-[0-9a-f-]+-sign-pod, SIMULATED\): Succeeded: All Steps have completed executing — results: (log-index|signature)=/);
  assert.match(stdout, /Tekton: TaskRun ir-[0-9a-f-]+-sign \(pod \S+, SIMULATED\): Failed: "step-sign" exited with code 1/);
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
  assert.match(ok, /signature = signature:\{"image":"quay\.io\/example\/app@sha256:[0-9a-f]+"\}/);
  assert.match(ok, /log-index = log-index:/);

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
  assert.match(git, /signature = signature:\{"image":"quay\.io\/example\/app@sha256:[0-9a-f]+"\}/);
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
  assert.match(typed, /signature = sig\(quay\.io\/example\/app@sha256:[0-9a-f]{64}\)/);
  assert.match(typed, /signed-by = release-bot with release-key/);
  assert.doesNotMatch(typed, /log = /);
  assert.match(stdout, /a malformed SigningRequest was refused by the remote apiserver before the controller could see it: .*spec\.tags/);
  for (const b of [ok, git, approval, refused, notAllowed, missing, fails]) assert.match(b, /^\s*\[ok\]/, b);
  assert.match(stdout, /All 8 requests ended as expected\./);
  // Progress was shown while the requests ran, as the requester reads it.
  assert.match(stdout, /managed-team-1-tenant\/sign-allowed: conditions\[0\]\.reason Running: PipelineRun internal-services\/ir-[0-9a-f-]+ is running  => a waiting requester keeps waiting/);

  // Nothing is left behind: the controller process and the environment's directory are gone.
  const pid = Number(/controller started \(pid (\d+)\)/.exec(stdout)?.[1]);
  assert.ok(pid > 0 && !alive(pid), `controller pid ${pid} still alive`);
  const dir = /dir (\/\S+?)\)/.exec(stdout)?.[1];
  assert.ok(dir, 'environment directory not printed');
  assert.ok(!existsSync(dir), `${dir} still exists`);
});

test('internal-services local --kcp: three workspaces on two shards of a real sharded kcp, one kubeconfig; two allowed by path run, the third is Rejected naming its path; a tenant in root:team-a runs today\'s git-shaped request with kubectl create -f and no -n, and one created in "default" is Rejected naming the entry and the namespace to use; exits 0', { timeout: 420_000 }, async () => {
  const { code, stdout, output } = await runLocalTour(['--kcp'], 400_000);
  assert.equal(code, 0, output);
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
    assert.match(b, new RegExp(`result: +signature = signature:\\{"image":"quay\\.io/example/app-team-${who}@sha256:`), b);
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
  assert.match(git, /result: +signature = signature:\{"image":"quay\.io\/example\/app-team-a@sha256:[0-9a-f]+"\}/, git);
  // The same file with a kubeconfig naming no namespace: in "default", Rejected, naming the entry as written and the namespace to use.
  const stray = block(/\] +root:team-a \(shard root\) default\/sign-image-[a-z0-9]{5} — the same file/);
  assert.match(stray, /^\s*\[ok\]/, stray);
  assert.match(stray, /Succeeded=False, reason Rejected/);
  assert.match(stray, /message: +namespace "default" on remote "root:team-a" is not on the allowList of InternalServicesConfig internal-services\/config; ask the administrators of the internal cluster to add the entry "root:team-a\/default" to spec\.allowList; requests of remote "root:team-a" are served in namespace "team"$/m, stray);
  assert.doesNotMatch(stray, /team-b|team-c/, "another workspace's entries are not shown");
  assert.match(stdout, /All 5 requests ended as expected\./);
});
