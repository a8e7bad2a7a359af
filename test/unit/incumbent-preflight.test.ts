/** The preflight's verdict on the Go controller's Deployment and Lease (src/migrate/incumbent-preflight.ts). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { V1Deployment, V1Lease } from '@kubernetes/client-node';
import { incumbentVerdict, transitionOf, INCUMBENT_DEPLOYMENT, INCUMBENT_LEASE, INCUMBENT_NAMESPACE } from '../../src/migrate/incumbent-preflight.js';

const refs = { namespace: INCUMBENT_NAMESPACE, deployment: INCUMBENT_DEPLOYMENT, lease: INCUMBENT_LEASE };
const NOW = new Date('2026-11-27T10:00:00Z');
const deployment = (replicas: number, running = replicas, ready = running): V1Deployment => ({ spec: { replicas, selector: {}, template: {} }, status: { replicas: running, readyReplicas: ready } });
const lease = (holder: string | undefined, renewedSecondsAgo: number, duration = 15): V1Lease => ({
  spec: { ...(holder !== undefined ? { holderIdentity: holder } : {}), leaseDurationSeconds: duration, renewTime: new Date(NOW.getTime() - renewedSecondsAgo * 1000) },
});

test('the defaults are the names the Go controller\'s own manifests give (config/default namePrefix and namespace, main.go --leader-election-id)', () => {
  assert.deepEqual(refs, { namespace: 'internal-services-system', deployment: 'internal-services-controller-manager', lease: 'b548bb9d.redhat.com' });
});

test('clear: nothing installed, or scaled to 0 with its lease run out or released', () => {
  const cases: Array<[string, V1Deployment | null, V1Lease | null, RegExp]> = [
    ['never installed', null, null, /no Deployment internal-services-system\/internal-services-controller-manager, no Lease/],
    ['scaled to 0, lease ran out', deployment(0), lease('go-pod-1_abc', 16), /scaled to 0, Lease .* not held/],
    ['scaled to 0, lease released (no holder)', deployment(0), lease('', 1), /not held/],
    ['scaled to 0, lease never made', deployment(0), null, /no Lease/],
  ];
  for (const [name, d, l, msg] of cases) {
    const v = incumbentVerdict(refs, d, l, NOW);
    assert.equal(v.clear, true, `${name}: ${v.message}`);
    assert.match(v.message, msg, name);
  }
});

test('refused: replicas asked for or running, a lease still held, or either unreadable; the message says what to scale down or grant', () => {
  const cases: Array<[string, Parameters<typeof incumbentVerdict>[1], Parameters<typeof incumbentVerdict>[2], RegExp]> = [
    ['running and ready', deployment(1), null, /has 1 replica\(s\) asked for, 1 running, 1 ready: scale it down \(kubectl -n internal-services-system scale deployment internal-services-controller-manager --replicas=0\)/],
    ['scaled to 0, its pod still going', deployment(0, 1, 0), null, /0 replica\(s\) asked for, 1 running/],
    ['asked for, not ready yet', deployment(2, 0, 0), null, /2 replica\(s\) asked for/],
    ['scaled down, lease renewed 3 s ago', deployment(0), lease('go-pod-1_abc', 3), /Lease internal-services-system\/b548bb9d\.redhat\.com is held by "go-pod-1_abc", held until 2026-11-27T10:00:12\.000Z unless renewed/],
    ['lease held, no deployment (run by hand)', null, lease('laptop_1', 0, 137), /held by "laptop_1"/],
    ['deployment forbidden', { error: 'HTTP 403 forbidden', forbidden: true }, null, /reading its Deployment .* was refused \(HTTP 403 forbidden\); grant get on it \(config\/rbac\/internal\/cluster_role\.yaml\), or start with --no-incumbent-check only if no Go controller was ever installed/],
    ['lease unreachable', deployment(0), { error: 'connect ECONNREFUSED', forbidden: false }, /reading its Lease .* failed \(connect ECONNREFUSED\)/],
  ];
  for (const [name, d, l, msg] of cases) {
    const v = incumbentVerdict(refs, d, l, NOW);
    assert.equal(v.clear, false, `${name}: ${v.message}`);
    assert.match(v.message, /^not serving while the Go controller may run/, name);
    assert.match(v.message, msg, name);
  }
});

test('while serving: the Go controller back (scaled up again, its Lease taken) or unreadable pauses at once; gone again resumes; the verdict names what came back', () => {
  const steps: Array<[string, Parameters<typeof incumbentVerdict>[1], Parameters<typeof incumbentVerdict>[2], 'pause' | 'resume' | undefined, RegExp]> = [
    ['serving, scaled to 0', deployment(0), lease('go-pod-1_abc', 60), undefined, /does not run/],
    ['GitOps resync: asked for 1, no pod yet', deployment(1, 0, 0), lease('go-pod-1_abc', 60), 'pause', /has 1 replica\(s\) asked for, 0 running/],
    ['its pod runs and leads', deployment(1), lease('go-pod-2_def', 1), undefined, /held by "go-pod-2_def"/],
    ['scaled to 0, its lease still held', deployment(0), lease('go-pod-2_def', 5), undefined, /held by "go-pod-2_def"/],
    ['its lease ran out', deployment(0), lease('go-pod-2_def', 16), 'resume', /does not run/],
    ['the Deployment cannot be read any more', { error: 'HTTP 403 forbidden', forbidden: true }, null, 'pause', /refused/],
    ['readable again, gone', null, null, 'resume', /does not run/],
  ];
  let paused = false;
  for (const [name, d, l, want, msg] of steps) {
    const v = incumbentVerdict(refs, d, l, NOW);
    const t = transitionOf(paused, v);
    assert.equal(t, want, `${name}: ${v.message}`);
    assert.match(v.message, msg, name);
    if (t) paused = t === 'pause';
  }
  assert.equal(paused, false);
});
