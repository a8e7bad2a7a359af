/** What the controller knows of ServiceAccounts (src/controller/service-accounts.ts): one look-up at a time per name, answers kept a while. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { ServiceAccountChecks } from '../../src/controller/service-accounts.js';

test('one look-up per name however many ask; the answer is kept for its ttl, then asked again; a failure is "unknown" and said once', async () => {
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
    missingTtlMs: 100,
    log,
  });
  const answered = (name: string) => new Promise<void>((resolve) => checks.check(name, resolve));
  assert.equal(checks.known('signer'), undefined);
  await Promise.all([answered('signer'), answered('signer'), answered('releaser')]);
  assert.deepEqual(asked.sort(), ['releaser', 'signer'], 'one look-up per name');
  assert.equal(checks.known('signer'), 'present');
  assert.equal(checks.known('releaser'), 'missing');
  // within the ttl: answered at once, nothing asked
  await answered('releaser');
  await answered('signer');
  assert.equal(asked.length, 2);
  // created meanwhile: a "missing" answer is kept only briefly, a "present" one for the ttl
  exists.add('releaser');
  now = 100;
  assert.equal(checks.known('releaser'), undefined);
  assert.equal(checks.known('signer'), 'present');
  await answered('releaser');
  assert.equal(checks.known('releaser'), 'present');
  now = 1000;
  assert.equal(checks.known('signer'), undefined, 'asked again after the ttl');
  // the cluster does not answer: unknown, warned about once
  fail = true;
  now = 5000;
  await Promise.all([answered('a'), answered('b')]);
  assert.equal(checks.known('a'), 'unknown');
  assert.equal(checks.known('b'), 'unknown');
  assert.equal(warnings.length, 1);
  assert.match(String((warnings[0] as { msg: string }).msg), /needs get on serviceaccounts in its namespace/);
});
