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
import { confirmingRead } from '../../src/controller/listing.js';

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
