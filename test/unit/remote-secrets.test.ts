/** Reading a remote's kubeconfig Secret (src/remotes/secrets.ts): what it asks for, or why it cannot be used. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ANNOTATION_POLL_INTERVAL, ANNOTATION_REMOTE_MODE, ANNOTATION_REMOTE_NAME, readRemoteSecret } from '../../src/remotes/secrets.js';

const KUBECONFIG = `apiVersion: v1
kind: Config
clusters: [{ name: c, cluster: { server: "https://remote.example:6443", certificate-authority-data: "" } }]
users: [{ name: u, user: { token: "t" } }]
contexts: [{ name: x, context: { cluster: c, user: u } }]
current-context: x
`;
const b64 = (s: string) => Buffer.from(s).toString('base64');
const secret = (annotations: Record<string, string> = {}, data: Record<string, string> | null = { kubeconfig: b64(KUBECONFIG) }, name = 'remote-prod') => ({ metadata: { name, namespace: 'internal-services', annotations }, ...(data ? { data } : {}) });
const WATCH = { mode: 'watch' as const };

test('a usable Secret: named by the annotation or the Secret, in the default mode unless it says', () => {
  const byName = readRemoteSecret(secret(), WATCH);
  assert.ok(byName.ok);
  assert.equal(byName.remote.name, 'remote-prod');
  assert.deepEqual(byName.remote.mode, { mode: 'watch' });
  assert.equal(byName.remote.kubeconfig.getCurrentCluster()?.server, 'https://remote.example:6443');
  const annotated = readRemoteSecret(secret({ [ANNOTATION_REMOTE_NAME]: 'prod', [ANNOTATION_REMOTE_MODE]: 'poll', [ANNOTATION_POLL_INTERVAL]: '30s' }), WATCH);
  assert.ok(annotated.ok);
  assert.equal(annotated.remote.name, 'prod');
  assert.deepEqual(annotated.remote.mode, { mode: 'poll', pollIntervalMs: 30_000 });
  // The fingerprint follows what matters, so an unchanged Secret (a resync) changes nothing.
  const fp = (s: ReturnType<typeof readRemoteSecret>) => (s.ok ? s.remote.fingerprint : '');
  assert.equal(fp(readRemoteSecret(secret(), WATCH)), fp(readRemoteSecret(secret(), WATCH)));
  assert.notEqual(fp(readRemoteSecret(secret(), WATCH)), fp(readRemoteSecret(secret({ [ANNOTATION_REMOTE_MODE]: 'poll' }), WATCH)));
  assert.notEqual(fp(readRemoteSecret(secret(), WATCH)), fp(readRemoteSecret(secret({}, { kubeconfig: b64(KUBECONFIG.replace('t"', 'rotated"')) }), WATCH)));
});

test('a Secret that cannot be used says why, naming the Secret', () => {
  const cases: Array<[ReturnType<typeof secret>, RegExp]> = [
    [secret({}, null), /^Secret internal-services\/remote-prod: no data\.kubeconfig/],
    [secret({}, { kubeconfig: b64('not: [yaml') }), /data\.kubeconfig is not a kubeconfig/],
    [secret({}, { kubeconfig: b64('apiVersion: v1\nkind: Config\n') }), /names no current context with a cluster server/],
    [secret({}, { kubeconfig: b64(KUBECONFIG.replace('{ token: "t" }', '{ exec: { command: "/bin/sh", apiVersion: "client.authentication.k8s.io/v1" } }')) }), /runs a credential plugin \(exec\/auth-provider\), which the controller does not run/],
    [secret({ [ANNOTATION_REMOTE_NAME]: 'Prod/1' }), /remote name "Prod\/1" is not a DNS label/],
    [secret({}, undefined, 'x'.repeat(70)), /is not a DNS label/],
    [secret({ [ANNOTATION_REMOTE_MODE]: 'stream' }), /remote-mode must be watch or poll, not "stream"/],
    [secret({ [ANNOTATION_POLL_INTERVAL]: '10ms' }), /poll-interval must be a duration of at least 1s, like 30s, not "10ms"/],
  ];
  for (const [s, re] of cases) {
    const r = readRemoteSecret(s, WATCH);
    assert.equal(r.ok, false, JSON.stringify(s.metadata));
    assert.match((r as { error: string }).error, re);
  }
});
