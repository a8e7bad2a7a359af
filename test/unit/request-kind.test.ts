/**
 * The request-kind seam without a cluster: keys that name a kind, what the
 * controller makes for a request of another kind (and how it maps back),
 * decide() with a kind's own shape check and words, and the checks on a set
 * of kinds. The same path on real control planes: test/integration/request-kinds.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { requestKey, splitRequestKey, tenantOfKey } from '../../src/api/request-key.js';
import type { InternalRequest } from '../../src/api/types.js';
import { decide, type Action, type Observation } from '../../src/controller/decide.js';
import { checkKinds, INTERNAL_REQUEST_KIND, kindLabel, type RequestKind } from '../../src/requests/request-kind.js';
import { ANNOTATION_REQUEST_KIND, requestKeyOf, resolutionFor } from '../../src/tekton/pipelinerun.js';
import { config, NS, pipelineRun, request, observation } from './fixtures.js';

const signing: RequestKind = {
  kind: 'SigningRequest',
  resource: { group: 'signing.example.com', version: 'v1alpha1', plural: 'signingrequests' },
  builtIn: false,
  toRequest: (obj) => obj as unknown as InternalRequest,
  checkShape: (req) => (req.spec.params?.['image'] ? undefined : 'spec.image is required'),
  statusBody: (req, status) => ({ apiVersion: 'signing.example.com/v1alpha1', kind: 'SigningRequest', metadata: req.metadata, status }) as never,
};

const observe = (o: Partial<Observation>): Observation => observation(o);
const ofType = <T extends Action['type']>(a: Action[], t: T) => a.find((x) => x.type === t) as Extract<Action, { type: T }> | undefined;

test('keys: InternalRequest keys keep their three parts; another kind adds a fourth; every key splits back into what made it', () => {
  assert.equal(requestKey({ remote: 'default', namespace: 'team-a', name: 'req' }), 'default/team-a/req');
  assert.equal(requestKey({ remote: 'prod', namespace: 'team-a', name: 'req', kind: 'SigningRequest' }), 'prod/team-a/req/SigningRequest');
  assert.deepEqual(splitRequestKey('default/team-a/req'), { remote: 'default', namespace: 'team-a', name: 'req', cacheKey: 'team-a/req' });
  assert.deepEqual(splitRequestKey('prod/team-a/a.b.c/SigningRequest'), { remote: 'prod', namespace: 'team-a', name: 'a.b.c', kind: 'SigningRequest', cacheKey: 'team-a/a.b.c' });
  assert.equal(tenantOfKey('prod/team-a/req/SigningRequest'), 'prod/team-a', 'kinds share tenants (fair turns, capacity)');
  assert.equal(tenantOfKey('prod/team-a/req'), 'prod/team-a');
  const label = fc.stringMatching(/^[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?$/);
  const name = fc.stringMatching(/^[a-z0-9]([-.a-z0-9]{0,40}[a-z0-9])?$/);
  const kind = fc.option(fc.stringMatching(/^[A-Z][A-Za-z0-9]{0,20}$/), { nil: undefined });
  fc.assert(
    fc.property(label, label, name, kind, (remote, namespace, n, k) => {
      const key = requestKey({ remote, namespace, name: n, kind: k });
      const back = splitRequestKey(key);
      assert.deepEqual([back.remote, back.namespace, back.name, back.kind], [remote, namespace, n, k]);
      assert.equal(tenantOfKey(key), `${remote}/${namespace}`);
    }),
    { numRuns: Number(process.env['FC_NUM_RUNS'] ?? 200) },
  );
});

test('what is made for a request of another kind names the kind and maps back to its key; InternalRequest ones stay as before', () => {
  const req = request({ params: { image: 'quay.io/x' } }, { name: 'twin' });
  const served = config({ allowList: ['prod/team-a'] });
  const a = decide(observe({ request: req, remote: 'prod', kind: signing, config: served }));
  const pr = ofType(a, 'createPipelineRun')!.pipelineRun;
  assert.equal(pr.metadata.annotations?.[ANNOTATION_REQUEST_KIND], 'SigningRequest');
  assert.equal(requestKeyOf(pr), 'prod/team-a/twin/SigningRequest');
  const builtIn = ofType(decide(observe({ request: req, remote: 'prod', config: served })), 'createPipelineRun')!.pipelineRun;
  assert.equal(builtIn.metadata.annotations?.[ANNOTATION_REQUEST_KIND], undefined);
  assert.equal(requestKeyOf(builtIn), 'prod/team-a/twin');
  // The same for ResolutionRequests (and approvals, through the same ownedBy()).
  const ref = { resolver: 'git', params: [{ name: 'url', value: 'https://example.com/x.git' }] };
  assert.equal(requestKeyOf({ metadata: resolutionFor(req, ref, NS, 'prod', 'SigningRequest').metadata! }), 'prod/team-a/twin/SigningRequest');
  assert.equal(requestKeyOf({ metadata: resolutionFor(req, ref, NS, 'prod').metadata! }), 'prod/team-a/twin');
});

test("decide() asks the request's kind what is wrong with its shape, and names the kind in its messages", () => {
  const bad = request({ params: { note: 'no image' } });
  const w = ofType(decide(observe({ request: bad, kind: signing })), 'writeStatus')!;
  assert.equal(w.status.conditions?.[0]?.reason, 'Rejected');
  assert.equal(w.status.conditions?.[0]?.message, 'spec.image is required');
  // The built-in check would have let this one through (params are a map of strings).
  assert.equal(INTERNAL_REQUEST_KIND.checkShape(bad), undefined);
  // A run deleted under a running request: the message says which kind to create again.
  const running = request({}, {}, { conditions: [{ type: 'Succeeded', status: 'Unknown', reason: 'Running', message: 'm', lastTransitionTime: '2026-11-22T09:00:00Z' }], pipelineRun: `${NS}/ir-u-1` });
  const missing = ofType(decide(observe({ request: running, kind: signing })), 'writeStatus')!;
  assert.match(missing.status.conditions?.[0]?.message ?? '', /create a new SigningRequest to try again$/);
  const gone = decide(observe({ request: undefined, pipelineRuns: [pipelineRun('u-1', { conditions: [{ type: 'Succeeded', status: 'Unknown', reason: 'Running' }] })], kind: signing }));
  assert.equal(ofType(gone, 'cancelPipelineRun')?.why, 'its SigningRequest was deleted');
});

test('the built-in kind reads and writes an InternalRequest as it is', () => {
  const req = request();
  assert.equal(INTERNAL_REQUEST_KIND.toRequest(req as never), req);
  const status = { conditions: [{ type: 'Succeeded', status: 'Unknown' as const, reason: 'Running', message: 'm', lastTransitionTime: '2026-11-22T09:00:00Z' }] };
  assert.deepEqual(INTERNAL_REQUEST_KIND.statusBody(req, status), { ...req, status });
  assert.equal(kindLabel(INTERNAL_REQUEST_KIND), undefined);
  assert.equal(kindLabel(signing), 'SigningRequest');
  assert.equal(kindLabel(undefined), undefined);
});

test('a set of kinds to serve: at least one, no two with one Kind or one resource, each a Kind', () => {
  checkKinds([INTERNAL_REQUEST_KIND, signing]);
  assert.throws(() => checkKinds([]), /no request kind/);
  assert.throws(() => checkKinds([signing, { ...signing, resource: { ...signing.resource, plural: 'other' } }]), /share the kind SigningRequest/);
  assert.throws(() => checkKinds([signing, { ...signing, kind: 'Other' }]), /share the resource signingrequests\.signing\.example\.com/);
  assert.throws(() => checkKinds([{ ...signing, kind: 'signing/request' }]), /is not a Kind/);
});
