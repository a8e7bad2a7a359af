/** What the controller knows of ServiceAccounts (src/controller/service-accounts.ts): one look-up at a time per name, "present" kept a while for all, "missing" only for the request that asked. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { ServiceAccountChecks } from '../../src/controller/service-accounts.js';

test('one look-up per name however many ask; "present" serves every request for its ttl; "missing" only the request that asked; a failure is "unknown" and said once', async () => {
  let now = 0;
  const asked: string[] = [];
  const exists = new Set(['signer']);
  let fail = false;
  const warnings: unknown[] = [];
  const log = pino({ level: 'warn' }, { write: (l: string) => void warnings.push(JSON.parse(l)) });
  const checks = new ServiceAccountChecks({
    get: async (name) => {
      asked.push(name);
      await new Promise((r) => setTimeout(r, 5));
      if (fail) throw Object.assign(new Error('forbidden'), { code: 403 });
      return exists.has(name);
    },
    now: () => now,
    ttlMs: 1000,
    log,
  });
  const answered = (name: string, owner: string) => new Promise<void>((resolve) => checks.check(name, owner, resolve));
  assert.equal(checks.known('signer', 'r1'), undefined);
  await Promise.all([answered('signer', 'r1'), answered('signer', 'r2'), answered('releaser', 'r1'), answered('releaser', 'r3')]);
  assert.deepEqual(asked.sort(), ['releaser', 'signer'], 'one look-up per name');
  assert.equal(checks.known('signer', 'r1'), 'present');
  assert.equal(checks.known('signer', 'another'), 'present', '"present" serves every request');
  assert.equal(checks.known('releaser', 'r1'), 'missing');
  assert.equal(checks.known('releaser', 'r3'), 'missing', 'both requests that asked meanwhile');
  assert.equal(checks.known('releaser', 'r4'), undefined, '"missing" is not told to a request that did not ask');
  // within the ttl: answered at once, nothing asked
  await answered('signer', 'r5');
  assert.equal(asked.length, 2);
  // created after the refusal: the next request asks again and sees it at once
  exists.add('releaser');
  await answered('releaser', 'r4');
  assert.equal(checks.known('releaser', 'r4'), 'present');
  assert.equal(asked.length, 3);
  // "present" is asked again after the ttl
  now = 1000;
  assert.equal(checks.known('signer', 'r1'), undefined);
  // the cluster does not answer: unknown, for everyone, warned about once
  fail = true;
  await Promise.all([answered('a', 'r1'), answered('b', 'r2')]);
  assert.equal(checks.known('a', 'r9'), 'unknown');
  assert.equal(checks.known('b', 'r9'), 'unknown');
  assert.equal(warnings.length, 1);
  assert.match(String((warnings[0] as { msg: string }).msg), /needs get on serviceaccounts in its namespace/);
});
