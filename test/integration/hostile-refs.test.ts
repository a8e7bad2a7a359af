/**
 * Hostile references on the REAL stack (issue 22): Tekton Pipelines v1.6's
 * controller, its git and bundles resolvers and its webhook on the internal
 * control plane, the catalog served by git daemon on loopback, the controller
 * as its CLI process. Each hostile class is Rejected with a message naming
 * the param and the rule, and the internal cluster never shows a
 * ResolutionRequest or a PipelineRun for it: a watch on both, open for the
 * whole file, records every one the controller makes (they are removed once
 * the request is decided, so a list at the end would prove nothing).
 *
 * The first test is the control: asked directly, Tekton's git resolver reads
 * a marker file outside its checkout and runs a revision that begins with "-"
 * as an option to git. So when a request with such a value is refused and no
 * ResolutionRequest was ever made for it, the marker was not read and nothing
 * was run: the resolver's own behaviour is the proof, not our code.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { type Environment, type GitRepository } from '../../src/localenv/index.js';
import type { InternalRequestSpec } from '../../src/api/types.js';
import { createRequest, messageOf, resolveDirectly, sample, scrape, setRunConfigAndWait, simulatedStep, startController, waitFor, waitForPhase, watchMade, type ControllerProcess, type Made, tektonStack } from './helpers.js';

const TENANT = 'release-team';
const FINAL = ['Succeeded', 'Failed', 'Rejected'];
const CONFIG = 'InternalServicesConfig internal-services/config';
let env: Environment;
let internalAdmin: KubeConfig;
let requester: KubeConfig;
let controller: ControllerProcess;
let metricsPort: number;
let catalog: GitRepository;
let anyPath: GitRepository;
let head: string;
/** Outside every repository: a Pipeline a resolver would happily return, and where a command run by git would leave a file. */
let outside: string;
let marker: string;
const TOKEN = `marker-${process.pid}-${Date.now()}`;

/** Every ResolutionRequest and PipelineRun the controller made, by request uid, as first seen. */
let made: Made;

const gitRef = (url: string, revision: string, pathInRepo: string) => ({ resolver: 'git', params: [{ name: 'url', value: url }, { name: 'revision', value: revision }, { name: 'pathInRepo', value: pathInRepo }] });
const task = (name: string, vars: Record<string, string>, results: string[] = []) =>
  stringify({ apiVersion: 'tekton.dev/v1', kind: 'Task', metadata: { name }, spec: { params: [{ name: 'image', default: '' }], results: results.map((r) => ({ name: r })), steps: [simulatedStep(name, vars)] } });
const pipeline = (name: string, spec: Record<string, unknown>) => stringify({ apiVersion: 'tekton.dev/v1', kind: 'Pipeline', metadata: { name }, spec });
/** Climbs out of any checkout directory to the marker (Go's Clean stops at "/"). */
const climbing = () => `${'../'.repeat(16)}${marker.slice(1)}`;

/** A request that must be Rejected before anything is resolved for it. */
async function expectRefusedBeforeResolution(name: string, message: RegExp, opts: { rrAllowed?: number } = {}): Promise<void> {
  const r = await waitForPhase(requester, TENANT, name, FINAL, 60_000);
  assert.equal(r.status?.conditions?.[0]?.reason, 'Rejected', `${name}: ${messageOf(r)}`);
  assert.match(messageOf(r), message, name);
  assert.equal(r.status?.pipelineRun, undefined, `${name}: nothing ran`);
  const uid = r.metadata.uid!;
  assert.equal((made.rr.get(uid) ?? []).length, opts.rrAllowed ?? 0, `${name}: ResolutionRequests made: ${JSON.stringify((made.rr.get(uid) ?? []).map((x) => x.spec?.params))}`);
  assert.equal((made.pr.get(uid) ?? []).length, 0, `${name}: a PipelineRun was made`);
}

before(async () => {
  ({ env, internalAdmin, requester } = await tektonStack(TENANT));
  outside = mkdtempSync(join(tmpdir(), 'hostile-refs-'));
  marker = join(outside, 'marker.yaml');
  writeFileSync(marker, pipeline('marker', { description: TOKEN, tasks: [{ name: 't', taskSpec: { steps: [simulatedStep('t')] } }] }));
  catalog = await env.tekton!.git.repository('catalog');
  anyPath = await env.tekton!.git.repository('anypath');
  const signSpec = {
    params: [{ name: 'image' }, { name: 'taskGitUrl' }, { name: 'taskGitRevision' }],
    results: [{ name: 'signature', value: '$(tasks.sign.results.signature)' }],
    tasks: [{ name: 'sign', params: [{ name: 'image', value: '$(params.image)' }], taskRef: gitRef('$(params.taskGitUrl)', '$(params.taskGitRevision)', 'tasks/internal/sign/sign.yaml') }],
  };
  head = await catalog.commit(
    {
      'pipelines/internal/sign-image/sign-image.yaml': pipeline('sign-image', signSpec),
      'pipelines/internal/sign-image/climbing.yaml': pipeline('climbing', { params: [{ name: 'taskGitUrl' }], tasks: [{ name: 'x', taskRef: gitRef('$(params.taskGitUrl)', 'main', climbing()) }] }),
      'pipelines/internal/other/other.yaml': pipeline('other', { tasks: [{ name: 'o', taskSpec: { steps: [simulatedStep('o')] } }] }),
      'tasks/internal/sign/sign.yaml': task('sign', { SIMULATED_RESULT_signature: 'sig:$(params.image)' }, ['signature']),
    },
    'the catalog',
  );
  await anyPath.commit({ 'pipelines/p.yaml': pipeline('p', { tasks: [{ name: 'o', taskSpec: { steps: [simulatedStep('o')] } }] }) }, 'any path');
  made = await watchMade(internalAdmin);
  controller = await startController(env, ['--metrics-bind-address', '127.0.0.1:0']);
  metricsPort = Number(String((await controller.waitForLog((l) => l.msg === 'serving metrics')).address).split(':').pop());
  await setRunConfigAndWait(internalAdmin, controller, policy());
});

/** The configuration of these tests. */
function policy(): Record<string, unknown> {
  return {
    allowList: [TENANT],
    allowedGitResolverURLs: [anyPath.url],
    sources: {
      git: [{ urls: [catalog.url], revisions: ['main'], commits: { reachable: true }, paths: ['pipelines/internal/sign-image/**', 'tasks/**'] }],
      bundles: [{ repositories: ['docker.io/library/tasks'] }, { repositories: ['quay.io/org/catalog/*'], digestOnly: true }],
      resolutionTimeout: '20s',
    },
  };
}

after(async () => {
  made?.stop();
  await controller?.kill('SIGKILL');
  await env?.stop();
  if (outside) rmSync(outside, { recursive: true, force: true });
});

const todays = (over: Partial<Record<'url' | 'revision' | 'pathInRepo', string>> = {}, params: Record<string, string> = {}): InternalRequestSpec => ({
  pipeline: { pipelineRef: gitRef(over.url ?? catalog.url, over.revision ?? 'main', over.pathInRepo ?? 'pipelines/internal/sign-image/sign-image.yaml') },
  params: { image: 'img', taskGitUrl: catalog.url, taskGitRevision: 'main', ...params },
});

describe('hostile references, refused before resolution (real Tekton, git daemon)', () => {
  test('control: asked directly, Tekton\'s git resolver reads a file outside its checkout, and runs a revision beginning with "-" as an option (v1.6.0; a patched Tekton refuses both itself)', async (t) => {
    const read = await resolveDirectly(internalAdmin, 'control-climb', gitRef(anyPath.url, 'main', climbing()).params);
    t.diagnostic(`climbing pathInRepo, asked directly: ${read.state === 'resolved' ? 'the resolver returned the marker file' : `the resolver refused: ${read.state === 'failed' ? read.message : ''}`}`);
    if (read.state === 'resolved') assert.match(Buffer.from(read.content).toString('utf8'), new RegExp(TOKEN), 'the resolver returned the marker file from outside its checkout');
    // A patched Tekton (v1.6.1+, GHSA-j5q5-j9gm-2w5c) refuses ".." itself, or the path's escape after symbolic links.
    else assert.match(read.state === 'failed' ? read.message : '', /escape the repository|must not contain '\.\.'/, 'a Tekton that checks containment itself');
    // A local clone (v1.6 accepts a path as url) with --upload-pack: git runs it through the shell.
    const bare = join(outside, 'local.git');
    await promisify(execFile)('git', ['clone', '--quiet', '--bare', catalog.url, bare]);
    const ran = join(outside, 'ran');
    const opt = await resolveDirectly(internalAdmin, 'control-option', gitRef(bare, `--upload-pack=touch ${ran}; git upload-pack`, 'tasks/internal/sign/sign.yaml').params);
    t.diagnostic(`revision "--upload-pack=…", asked directly: ${existsSync(ran) ? 'git ran the command' : `not run (${opt.state === 'failed' ? opt.message : opt.state})`}`);
    assert.ok(existsSync(ran) || (opt.state === 'failed' && /must not begin with '-'|invalid/.test(opt.message)), `the revision ran as a command (${JSON.stringify(opt)})`);
    rmSync(ran, { force: true });
  });

  test('a ".." under a paths glob: the other Pipeline of the repository is refused however it is spelled', async () => {
    await Promise.all([
      createRequest(requester, TENANT, 'path-other', todays({ pathInRepo: 'pipelines/internal/other/other.yaml' })),
      createRequest(requester, TENANT, 'path-dotdot', todays({ pathInRepo: 'pipelines/internal/sign-image/../other/other.yaml' })),
      createRequest(requester, TENANT, 'path-dot', todays({ pathInRepo: 'pipelines/internal/sign-image/./../other/other.yaml' })),
      createRequest(requester, TENANT, 'path-slashes', todays({ pathInRepo: 'pipelines/internal/sign-image//other.yaml' })),
    ]);
    await expectRefusedBeforeResolution('path-other', /^spec\.pipeline\.pipelineRef: git ".*" at "refs\/heads\/main", "pipelines\/internal\/other\/other\.yaml" is not allowed by .*: sources\.git\[0\] allows paths "pipelines\/internal\/sign-image\/\*\*", "tasks\/\*\*"/);
    await expectRefusedBeforeResolution('path-dotdot', /^spec\.pipeline\.pipelineRef: git param "pathInRepo" "pipelines\/internal\/sign-image\/\.\.\/other\/other\.yaml" has a "\.\." segment.*: refused by InternalServicesConfig internal-services\/config before sources\.git\[0\] is applied/);
    await expectRefusedBeforeResolution('path-dot', /git param "pathInRepo" .* has a "\." segment.*before sources\.git\[0\] is applied/);
    await expectRefusedBeforeResolution('path-slashes', /git param "pathInRepo" .* has an empty segment.*before sources\.git\[0\] is applied/);
  });

  test('absolute and climbing paths under allowedGitResolverURLs (any path): refused, no ResolutionRequest, the marker never read', async () => {
    const cases: Array<[string, string, RegExp]> = [
      ['climb-marker', climbing(), /has a "\.\." segment/],
      ['absolute-marker', marker, /is absolute/],
      ['climb-from-inside', 'pipelines/../../../../../../../../../../../etc/passwd', /has a "\.\." segment/],
      ['git-metadata', '.git/config', /has a "\.git" segment/],
      ['backslash', 'pipelines\\..\\..\\x.yaml', /has a backslash/],
    ];
    await Promise.all(cases.map(([name, path]) => createRequest(requester, TENANT, name, { pipeline: { pipelineRef: gitRef(anyPath.url, 'main', path) } })));
    for (const [name, , why] of cases) {
      await expectRefusedBeforeResolution(name, new RegExp(`^spec\\.pipeline\\.pipelineRef: git param "pathInRepo" .*${why.source}.*: refused by ${CONFIG} before allowedGitResolverURLs is applied`));
    }
  });

  test('a revision beginning with "-" is refused before git ever sees it, at the pipelineRef and in a Task reference built from params', async () => {
    const ran = join(outside, 'ran-by-request');
    const option = `--upload-pack=touch ${ran}; git upload-pack`;
    await Promise.all([
      createRequest(requester, TENANT, 'rev-option', { pipeline: { pipelineRef: gitRef(anyPath.url, option, 'pipelines/p.yaml') } }),
      createRequest(requester, TENANT, 'rev-dash', { pipeline: { pipelineRef: gitRef(anyPath.url, '-h', 'pipelines/p.yaml') } }),
      createRequest(requester, TENANT, 'rev-refspec', { pipeline: { pipelineRef: gitRef(anyPath.url, '+main:refs/heads/x', 'pipelines/p.yaml') } }),
      createRequest(requester, TENANT, 'rev-nested', todays({}, { taskGitRevision: option })),
    ]);
    await expectRefusedBeforeResolution('rev-option', /^spec\.pipeline\.pipelineRef: git param "revision" "--upload-pack=touch .*" begins with "-", which git reads as an option, not a revision: refused by .* before allowedGitResolverURLs is applied/);
    await expectRefusedBeforeResolution('rev-dash', /git param "revision" "-h" begins with "-"/);
    await expectRefusedBeforeResolution('rev-refspec', /git param "revision" "\+main:refs\/heads\/x" begins with "\+"/);
    // The Pipeline itself is allowed and resolved (one ResolutionRequest); the Task reference built from the param is not.
    await expectRefusedBeforeResolution('rev-nested', /^tasks\[sign\]\.taskRef \(values from param "taskGitUrl", param "taskGitRevision"\): git param "revision" "--upload-pack=.*" begins with "-".*before sources\.git\[0\] is applied/, { rrAllowed: 1 });
    assert.ok(!existsSync(ran), 'nothing was run');
  });

  test('URL spellings: the same repository under another spelling runs, resolved and recorded canonical; unsafe spellings, and "x" for "x.git" on git daemon, are refused', async () => {
    const port = new URL(`http://${catalog.url.slice('git://'.length)}`).port;
    const spelled = `GIT://127.0.0.1:${port}/catalog.git/`;
    const created = await createRequest(requester, TENANT, 'url-spelled', todays({ url: spelled }, { taskGitUrl: `git://127.0.0.1:${port}/catalog.git/` }));
    const refused: Array<[string, string, RegExp | undefined]> = [
      ['url-dotdot', `git://127.0.0.1:${port}/x/../catalog.git`, /has a "\.\." path segment/],
      ['url-encoded-dot', `git://127.0.0.1:${port}/%2e%2e/catalog.git`, /percent-encoding in a git:\/\/ URL/],
      ['url-user', `git://someone@127.0.0.1:${port}/catalog.git`, /has user info/],
      ['url-port-zero', `git://127.0.0.1:0${port}/catalog.git`, /malformed port/],
      ['url-query', `${catalog.url}?x=1`, /has a query/],
      ['url-empty-segment', `git://127.0.0.1:${port}//catalog.git`, /has an empty path segment/],
      ['url-file', `file://${join(outside, 'local.git')}`, /has the scheme "file"/],
      ['url-local-path', join(outside, 'local.git'), /local paths are refused/],
      ['url-ext', 'ext::sh -c touch% /tmp/x', /has the character " "/],
      ['url-other-host', `git://127.0.0.2:${port}/catalog.git`, undefined],
      // git daemon serves ".../catalog" from a repository "catalog" when there is one: another repository.
      ['url-without-dot-git', `git://127.0.0.1:${port}/catalog`, undefined],
    ];
    await Promise.all(refused.map(([name, url]) => createRequest(requester, TENANT, name, todays({ url }))));
    for (const [name, url, why] of refused) {
      if (why) await expectRefusedBeforeResolution(name, new RegExp(`^spec\\.pipeline\\.pipelineRef: git param "url" .*${why.source}.*: refused by ${CONFIG} before any sources\\.git rule is applied`));
      else await expectRefusedBeforeResolution(name, new RegExp(`^spec\\.pipeline\\.pipelineRef: git url "${url.replace(/[.]/g, '\\.')}" is not allowed by ${CONFIG}`));
    }
    const done = await waitForPhase(requester, TENANT, 'url-spelled', FINAL, 90_000);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(done));
    const [pr, more] = made.pr.get(created.metadata.uid!) ?? [];
    assert.ok(pr && !more, 'one PipelineRun');
    assert.deepEqual(done.status?.results, { signature: 'sig:img' });
    // What was resolved and run is the canonical form, never the spelling sent.
    const rrs = made.rr.get(created.metadata.uid!) ?? [];
    assert.deepEqual(rrs.map((rr) => rr.spec?.params?.[0]?.value), [catalog.url, catalog.url]);
    assert.deepEqual(rrs.map((rr) => rr.spec?.params?.[1]?.value), [head, head], 'resolved at the commit main points at, never by name');
    assert.equal((pr.spec.pipelineSpec?.['tasks'] as Array<{ taskRef?: unknown }>)[0]?.taskRef, undefined, 'the Task runs embedded, as checked');
    assert.equal(done.status?.pipeline?.source, `git+${catalog.url}`);
    assert.equal(done.status?.pipeline?.references?.[0]?.source, `git+${catalog.url}`);
  });

  test('a nested Task reference with a climbing path, literal in an allowed Pipeline: refused after the Pipeline resolves, before the Task would', async () => {
    await createRequest(requester, TENANT, 'nested-climb', { pipeline: { pipelineRef: gitRef(catalog.url, 'main', 'pipelines/internal/sign-image/climbing.yaml') }, params: { taskGitUrl: anyPath.url } });
    await expectRefusedBeforeResolution('nested-climb', /^tasks\[x\]\.taskRef \(values from param "taskGitUrl"\): git param "pathInRepo" ".*marker\.yaml" has a "\.\." segment.*before allowedGitResolverURLs is applied/, { rrAllowed: 1 });
  });

  test('bundle spellings: Docker Hub under its other names is resolved as docker.io/library/…; unsafe spellings refused', async () => {
    const d = `sha256:${'e'.repeat(64)}`;
    const bundle = (b: string): InternalRequestSpec => ({ pipeline: { pipelineRef: { resolver: 'bundles', params: [{ name: 'bundle', value: b }, { name: 'name', value: 'sign' }, { name: 'kind', value: 'Pipeline' }] } } });
    const accepted = await createRequest(requester, TENANT, 'bundle-alias', bundle('registry-1.docker.io/library/tasks:v1'));
    const refused: Array<[string, string, RegExp]> = [
      ['bundle-upper', `quay.io/org/Catalog/sign@${d}`, /bundles param "bundle" .* has upper-case letters/],
      ['bundle-dotdot', `quay.io/org/catalog/../../evil/sign@${d}`, /bundles param "bundle" .* repository component "\.\."/],
      ['bundle-digest-case', `quay.io/org/catalog/sign@${d.toUpperCase().replace('SHA256', 'sha256')}`, /only sha256: with 64 lower-case/],
      ['bundle-tag-only', 'quay.io/org/catalog/sign:v1', /bundle "quay\.io\/org\/catalog\/sign:v1" is not pinned by digest/],
      ['bundle-elsewhere', 'evil.example/library/tasks:v1', /bundle repository "evil\.example\/library\/tasks" is not allowed/],
    ];
    await Promise.all(refused.map(([name, b]) => createRequest(requester, TENANT, name, bundle(b))));
    for (const [name, , why] of refused) await expectRefusedBeforeResolution(name, new RegExp(`^spec\\.pipeline\\.pipelineRef: .*${why.source}`));
    // No registry is reachable here: the point is what the resolver was asked for.
    const rr = await waitFor('the bundle ResolutionRequest', async () => made.rr.get(accepted.metadata.uid!)?.[0], 30_000);
    assert.deepEqual(rr.spec?.params, [{ name: 'bundle', value: 'docker.io/library/tasks:v1' }, { name: 'name', value: 'sign' }, { name: 'kind', value: 'pipeline' }]);
    const r = await waitForPhase(requester, TENANT, 'bundle-alias', FINAL, 60_000);
    assert.match(messageOf(r), /resolving it with the bundles resolver failed|did not answer/);
  });

  test('a rule that cannot be used as written is reported (/readyz, metric, the request\'s message) and grants nothing', async () => {
    const before = await fetch(`http://127.0.0.1:${controller.healthPort}/readyz?verbose`).then((r) => r.text());
    assert.doesNotMatch(before, /config-rules/);
    await setRunConfigAndWait(internalAdmin, controller, {
      allowList: [TENANT],
      sources: { git: [{ urls: [catalog.url], revisions: ['main'], paths: ['pipelines/internal/../**'] }], resolutionTimeout: '20s' },
    });
    const readyz = await fetch(`http://127.0.0.1:${controller.healthPort}/readyz?verbose`);
    assert.equal(readyz.status, 200, 'advisory: the controller serves everything else');
    assert.match(await readyz.text(), /config-rules[^\n]*\.\./);
    assert.equal(sample(await scrape(metricsPort), 'internal_services_config_problems'), 1);
    // The pattern, read as text, would have matched this path; as a rule it grants nothing.
    await createRequest(requester, TENANT, 'unusable-rule', todays({ pathInRepo: 'pipelines/internal/sign-image/sign-image.yaml' }));
    await expectRefusedBeforeResolution('unusable-rule', /unusable/);
    await setRunConfigAndWait(internalAdmin, controller, policy());
    assert.equal(sample(await scrape(metricsPort), 'internal_services_config_problems'), 0);
  });

  test('nothing the controller resolved or ran ever carried a hostile value', () => {
    const all = [...made.rr.values()].flat().flatMap((rr) => rr.spec?.params ?? []);
    for (const p of all) {
      const v = String(p.value);
      assert.ok(!v.includes('..') && !v.startsWith('-') && !v.startsWith('/') && !v.includes('\\') && !/[A-Z]/.test(p.name === 'url' ? v : ''), `ResolutionRequest param ${p.name}=${v}`);
    }
    assert.ok(all.length > 0);
  });
});
