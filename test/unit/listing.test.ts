/**
 * The confirming read (listing.ts): what the cache does not show is read from
 * the cluster before anything is removed; a refusal to show it (403) leaves the
 * cache's answer standing, and any other failure is retried by the caller.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { ApiException } from '@kubernetes/client-node';
import type { InternalRequest } from '../../src/api/types.js';
import { confirmingRead, removesForAnother, withoutUnconfirmedRemovals } from '../../src/controller/listing.js';
import type { Action } from '../../src/controller/actions.js';
import { pipelineRun } from './fixtures.js';
import type { PipelineRun } from '../../src/tekton/tekton-types.js';

const log = pino({ level: 'silent' });
const failing = (code: number) => ({ tryGet: async (): Promise<InternalRequest | undefined> => { throw new ApiException(code, 'refused', { message: 'no' }, {}); } });

test('confirmingRead: the cluster\'s copy when it has one, undefined when it has none or refuses to show it (403), and any other failure thrown', async () => {
  const req = { apiVersion: 'appstudio.redhat.com/v1alpha1', kind: 'InternalRequest', metadata: { name: 'r', namespace: 'team', uid: 'u' }, spec: {} } as unknown as InternalRequest;
  assert.equal(await confirmingRead({ tryGet: async () => req }, log, 'default/team/r', 'team', 'r'), req);
  assert.equal(await confirmingRead({ tryGet: async () => undefined }, log, 'default/team/r', 'team', 'r'), undefined);
  assert.equal(await confirmingRead(failing(403), log, 'default/team/r', 'team', 'r'), undefined);
  await assert.rejects(confirmingRead(failing(500), log, 'default/team/r', 'team', 'r'), (e: unknown) => e instanceof ApiException && e.code === 500);
  await assert.rejects(confirmingRead(failing(401), log, 'default/team/r', 'team', 'r'));
});

test('the live confirm: a run the controller did not make (the Go controller\'s) is confirmed with a read of its request before any cancel or delete, whatever request the cache takes it for; when the read is refused (403) it is left alone', async () => {
  const goRun = { ...pipelineRun('u-1'), metadata: { name: 'internalrequest-x', namespace: 'internal-services-system', labels: { 'internal-services.appstudio.openshift.io/name': 'req', 'internal-services.appstudio.openshift.io/namespace': 'team-a' } } } as PipelineRun;
  const ours = pipelineRun('u-1');
  const cancel = (pr: PipelineRun): Action => ({ type: 'cancelPipelineRun', pipelineRun: pr, why: 'gone' });
  const del = (pr: PipelineRun): Action => ({ type: 'deletePipelineRun', pipelineRun: pr, why: 'gone' });
  // The cache shows no request (uid undefined): ours would be confirmed (another uid than none), and the Go controller's too.
  assert.equal(removesForAnother([cancel(goRun)], undefined), true, 'the Go controller\'s run, its request not in the cache');
  assert.equal(removesForAnother([del(goRun)], 'u-1'), true, 'the Go controller\'s run, the request in the cache');
  assert.equal(removesForAnother([del(ours)], 'u-1'), false, 'our own run of the request the cache shows: no read');
  assert.equal(removesForAnother([del(ours)], 'u-2'), true);
  // Refused: ours goes as the cache says, the Go controller's stays.
  let refused = false;
  const got = await confirmingRead(failing(403), log, 'default/team-a/req', 'team-a', 'req', () => (refused = true));
  assert.equal(got, undefined);
  assert.equal(refused, true);
  assert.deepEqual(withoutUnconfirmedRemovals([cancel(goRun), del(goRun), del(ours), { type: 'requeueAfter', ms: 1 }]), [del(ours), { type: 'requeueAfter', ms: 1 }]);
  let absent = false;
  await confirmingRead({ tryGet: async () => undefined }, log, 'default/team-a/req', 'team-a', 'req', () => (absent = true));
  assert.equal(absent, false, 'not there is an answer, not a refusal');
});
