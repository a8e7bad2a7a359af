/**
 * spec.pipeline through Tekton's http resolver, end to end: a file server on
 * 127.0.0.1 (node:http, with an access log), the real Tekton http resolver
 * fetching from it for the controller's ResolutionRequests, real Tekton
 * running the PipelineRuns; only the TaskRun pods are simulated
 * (SimulatedKubelet). The controller runs as its CLI process.
 *
 * A URL names where a fetch starts, not what it gets: the rule lists the
 * sha256 of the reviewed file, the controller hashes the bytes it read, and
 * what runs is the Pipeline read from those bytes, embedded, never fetched
 * again by Tekton.
 */
import { after, before, describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { KubeConfig } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import { startEnvironment, type Environment, grantRequester, installProject } from '../../src/localenv/index.js';
import type { InternalRequestSpec } from '../../src/api/types.js';
import { createRequest, messageOf, onlyPipelineRunOf, pipelineRunsFor, setRunConfigAndWait, simulatedStep, startController, waitForPhase, type ControllerProcess } from './helpers.js';

const TENANT = 'release-team';
const FINAL = ['Succeeded', 'Failed', 'Rejected'];

let env: Environment;
let internalAdmin: KubeConfig;
let requester: KubeConfig;
let controller: ControllerProcess;
let server: Server;
let base: string;
/** Path → body the server answers with; a `redirect:` body answers 302 to that path. */
const files = new Map<string, string>();
/** Every request the server saw: method, path, user agent. */
const seen: Array<{ path: string; agent: string }> = [];

const sha = (s: string): string => createHash('sha256').update(s).digest('hex');

function pipeline(label: string): string {
  return stringify({
    apiVersion: 'tekton.dev/v1',
    kind: 'Pipeline',
    metadata: { name: 'release' },
    spec: {
      description: `release pipeline ${label}`,
      params: [{ name: 'image' }],
      results: [{ name: 'signature', value: '$(tasks.sign.results.signature)' }],
      tasks: [
        {
          name: 'sign',
          params: [{ name: 'image', value: '$(params.image)' }],
          taskSpec: { params: [{ name: 'image' }], results: [{ name: 'signature' }], steps: [simulatedStep('sign', { SIMULATED_RESULT_signature: `${label}:$(params.image)` })] },
        },
      ],
    },
  });
}

const REVIEWED = pipeline('reviewed');
const CHANGED = pipeline('changed');

const byUrl = (url: string): InternalRequestSpec => ({
  pipeline: { pipelineRef: { resolver: 'http', params: [{ name: 'url', value: url }] } },
  params: { image: 'quay.io/org/app@sha256:abc' },
});

const fetchesOf = (path: string) => seen.filter((s) => s.path === path);

function shows(t: TestContext, what: string): void {
  t.diagnostic(`${what} (real Tekton http resolver and a loopback file server; pods SIMULATED, no kubelet)`);
}

before(async () => {
  server = createServer((req, res) => {
    const path = req.url ?? '';
    seen.push({ path, agent: String(req.headers['user-agent'] ?? '') });
    const body = files.get(path);
    if (body === undefined) {
      res.writeHead(404).end('not found');
      return;
    }
    if (body.startsWith('redirect:')) {
      res.writeHead(302, { location: body.slice('redirect:'.length) }).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/yaml' }).end(body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  files.set('/pipelines/release.yaml', REVIEWED);
  files.set('/pipelines/moved.yaml', 'redirect:/elsewhere/changed.yaml');
  files.set('/elsewhere/changed.yaml', CHANGED);

  env = await startEnvironment({ tekton: true });
  await installProject(env);
  internalAdmin = env.internal.identities.admin.kubeConfig();
  requester = env.remote.identities.requester!.kubeConfig();
  await grantRequester(env, TENANT);
  await setRunConfigAndWait(internalAdmin, undefined, {
    allowList: [TENANT],
    sources: { http: [{ urls: [`${base}/pipelines/*.yaml`], sha256: [sha(REVIEWED)] }], resolutionTimeout: '30s' },
  });
  controller = await startController(env);
});

after(async () => {
  await controller?.kill('SIGKILL');
  await env?.stop();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
});

describe('spec.pipeline with the http resolver, the content bound by sha256, real Tekton (pods simulated)', () => {
  test('the reviewed file: fetched by the real resolver, hashed, run embedded (nothing fetched again); what ran is recorded with its digest', async (t) => {
    const created = await createRequest(requester, TENANT, 'reviewed', byUrl(`${base}/pipelines/release.yaml`));
    const pr = await onlyPipelineRunOf(internalAdmin, created.metadata.uid!);
    assert.equal(pr.spec.pipelineRef, undefined, 'the checked Pipeline runs embedded, nothing for Tekton to fetch');
    assert.equal(pr.spec.pipelineSpec?.['description'], 'release pipeline reviewed');
    const done = await waitForPhase(requester, TENANT, 'reviewed', FINAL, 90_000);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Succeeded', messageOf(done));
    assert.deepEqual(done.status?.results, { signature: 'reviewed:quay.io/org/app@sha256:abc' });
    assert.deepEqual(done.status?.pipeline, { resolver: 'http', source: `${base}/pipelines/release.yaml`, digest: `sha256:${sha(REVIEWED)}` });
    // Tekton's resolver may fetch more than once for one ResolutionRequest
    // (2 to 4 times seen here, all before its answer was written); the
    // controller hashes the bytes the answer carries. Once the run is made,
    // nothing fetches the file again: the Pipeline runs embedded.
    const fetches = fetchesOf('/pipelines/release.yaml');
    assert.ok(fetches.length >= 1, 'fetched by the resolver');
    assert.ok(fetches.every((f) => /^Go-http-client\//.test(f.agent)), `fetched by Tekton's resolver (Go), not by the controller: ${JSON.stringify(fetches)}`);
    await new Promise((r) => setTimeout(r, 2000));
    assert.equal(fetchesOf('/pipelines/release.yaml').length, fetches.length, 'no fetch after the request was decided and run');
    t.diagnostic(`the resolver fetched the file ${fetches.length} time(s) for one ResolutionRequest`);
    shows(t, `ran ${pr.metadata.name} from ${base}/pipelines/release.yaml at sha256:${sha(REVIEWED).slice(0, 12)}…`);
  });

  test('the same URL serving other bytes: Rejected naming the digest and the rule; no PipelineRun', async () => {
    files.set('/pipelines/release.yaml', CHANGED);
    try {
      const created = await createRequest(requester, TENANT, 'changed', byUrl(`${base}/pipelines/release.yaml`));
      const done = await waitForPhase(requester, TENANT, 'changed', FINAL, 60_000);
      assert.equal(done.status?.conditions?.[0]?.reason, 'Rejected');
      assert.match(messageOf(done), new RegExp(`^spec\\.pipeline\\.pipelineRef: the file the http resolver fetched has sha256 "${sha(CHANGED)}", which no rule that allows its URL accepts: sources\\.http\\[0\\] lists 1 reviewed file`));
      assert.deepEqual(await pipelineRunsFor(internalAdmin, created.metadata.uid!), []);
    } finally {
      files.set('/pipelines/release.yaml', REVIEWED);
    }
  });

  test('an allowed URL that redirects to other bytes: the resolver follows, the digest refuses', async () => {
    const created = await createRequest(requester, TENANT, 'moved', byUrl(`${base}/pipelines/moved.yaml`));
    const done = await waitForPhase(requester, TENANT, 'moved', FINAL, 60_000);
    assert.equal(done.status?.conditions?.[0]?.reason, 'Rejected');
    assert.match(messageOf(done), new RegExp(`has sha256 "${sha(CHANGED)}", which no rule that allows its URL accepts`));
    assert.ok(fetchesOf('/elsewhere/changed.yaml').length >= 1, 'the redirect was followed by the resolver');
    assert.equal(fetchesOf('/elsewhere/changed.yaml').length, fetchesOf('/pipelines/moved.yaml').length, 'each fetch of the allowed URL went on to the other');
    assert.deepEqual(await pipelineRunsFor(internalAdmin, created.metadata.uid!), []);
  });

  test('refused before anything is fetched: a URL no rule names, a query, credentials params', async () => {
    const cases: Array<[string, InternalRequestSpec, RegExp]> = [
      ['elsewhere', byUrl(`${base}/elsewhere/changed.yaml`), /^spec\.pipeline\.pipelineRef: http url "http:\/\/127\.0\.0\.1:\d+\/elsewhere\/changed\.yaml" is not allowed by InternalServicesConfig internal-services\/config; allowed: "http:\/\/127\.0\.0\.1:\d+\/pipelines\/\*\.yaml" \(sources\.http\[0\]\)/],
      ['query', byUrl(`${base}/pipelines/release.yaml?v=2`), /^spec\.pipeline\.pipelineRef: http param "url" .* has a query/],
      [
        'credentials',
        { ...byUrl(`${base}/pipelines/release.yaml`), pipeline: { pipelineRef: { resolver: 'http', params: [{ name: 'url', value: `${base}/pipelines/release.yaml` }, { name: 'http-username', value: 'x' }, { name: 'http-password-secret', value: 'internal-token' }] } } },
        /resolver params "http-username", "http-password-secret" are not accepted for the http resolver \(only "url"\)/,
      ],
    ];
    const before = seen.length;
    await Promise.all(cases.map(([name, spec]) => createRequest(requester, TENANT, `refused-${name}`, spec)));
    for (const [name, , message] of cases) {
      const done = await waitForPhase(requester, TENANT, `refused-${name}`, FINAL, 60_000);
      assert.equal(done.status?.conditions?.[0]?.reason, 'Rejected', name);
      assert.match(messageOf(done), message, name);
    }
    assert.deepEqual(seen.slice(before), [], 'nothing was fetched for a refused reference');
  });
});
