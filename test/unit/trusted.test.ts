/**
 * src/policy/trusted.ts against Tekton's own code: hack/trusted/sign is built
 * from github.com/tektoncd/pipeline v1.6.6 and sigstore (Go), and is the
 * ground truth for checksums and signatures.
 *
 * - realistic Task, Pipeline and StepAction fixtures: the checksum is Go's,
 *   byte for byte; Go-signed content verifies ('signed', with the right key
 *   name) for ECDSA P-256, RSA 2048 and ed25519 keys; unsigned content is
 *   'unsigned'; another key, a changed script, an added label are 'invalid';
 *   reordered YAML keys, kubectl's annotation, explicit defaults still verify;
 * - a property test: random Tasks (hostile strings, quantities, durations,
 *   parameter values of every shape) checksummed by both, in one Go process;
 * - src/policy/tekton-shapes.ts and kubernetes-shapes.ts are what
 *   hack/trusted/gen-shapes writes.
 *
 * Go is required (the test fails without it). The tools are built once into
 * ${INTERNAL_SERVICES_CACHE:-${XDG_CACHE_HOME:-~/.cache}/internal-services}/trusted/<hash>/,
 * the hash covering hack/trusted's go.mod, go.sum and sources and `go version`.
 * FC_NUM_RUNS (default 300) and FC_SEED drive the property test.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash, generateKeyPairSync, sign as nodeSign, type KeyObject } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { parse, stringify } from 'yaml';
import { parsePublicKey, SIGNATURE_ANNOTATION, tektonChecksum, tektonChecksumJson, verifySignature, type TrustedKey } from '../../src/policy/trusted.js';
import { repoRoot } from '../../src/util/repo.js';
import { buildTools } from '../trusted-tools.js';

const ROOT = repoRoot();

// ------------------------------------------------------------------ the Go tools (test/trusted-tools.ts)

let tools: { sign: string; genShapes: string };
let work: string;

function run(cmd: string, args: string[], input?: string): string {
  const r = spawnSync(cmd, args, { encoding: 'utf8', input, maxBuffer: 256 << 20 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.stderr}${r.error?.message ?? ''}`);
  return r.stdout;
}

function file(name: string, text: string): string {
  const p = join(work, name);
  writeFileSync(p, text);
  return p;
}

const yaml11 = (text: string): Record<string, unknown> => parse(text, { version: '1.1' }) as Record<string, unknown>;

/** Go's checksum of a YAML document, hex. */
function goChecksum(path: string): string {
  return run(tools.sign, ['--checksum', path]).trim();
}

/** Where the two marshalled forms part, for a readable failure. */
function firstDifference(a: string, b: string): string {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  return `at ${i}:\n  go: …${a.slice(Math.max(0, i - 60), i + 80)}\n  ts: …${b.slice(Math.max(0, i - 60), i + 80)}`;
}

function assertSameChecksum(name: string, path: string): void {
  const obj = yaml11(readFileSync(path, 'utf8'));
  const ts = tektonChecksum(obj);
  assert.ok(Buffer.isBuffer(ts), `${name}: trusted.ts cannot checksum it: ${JSON.stringify(ts)}`);
  const go = goChecksum(path);
  if (ts.toString('hex') !== go) {
    const goJson = run(tools.sign, ['--marshal', path]).trim();
    const tsJson = (tektonChecksumJson(obj) as { json: string }).json;
    assert.fail(`${name}: checksum differs from Tekton's, ${firstDifference(goJson, tsJson)}`);
  }
}

// ------------------------------------------------------------------ keys

interface Pair {
  name: string;
  privateKey: KeyObject;
  privatePath: string;
  key: TrustedKey;
}
let pairs: Pair[];

function makePair(name: string, kp: { privateKey: KeyObject; publicKey: KeyObject }): Pair {
  const privatePath = file(`${name}.key`, kp.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string);
  return { name, privateKey: kp.privateKey, privatePath, key: { name, publicKey: kp.publicKey.export({ type: 'spki', format: 'pem' }) as string } };
}

// ------------------------------------------------------------------ fixtures

const TASK = `apiVersion: tekton.dev/v1
kind: Task
metadata:
  name: build-and-push
  namespace: catalog
  labels:
    app.kubernetes.io/version: "0.3"
    team: "r&d <core>"
  annotations:
    tekton.dev/pipelines.minVersion: "0.50.0"
    tekton.dev/displayName: "Build & push — 構築 🚀"
    description: "uses <img> & \\u2028 separators\\u2029 and \\t tabs"
    kubectl.kubernetes.io/last-applied-configuration: '{"kind":"Task"}'
spec:
  description: |
    Builds an image & pushes it to <registry>.
  params:
    - name: IMAGE
      description: Reference of the image
    - name: BUILD_ARGS
      type: array
      default: ["--pull", "--no-cache"]
    - name: CONFIG
      type: object
      properties:
        registry: {}
        insecure: {type: string}
      default:
        registry: quay.io
        insecure: "false"
    - name: VERBOSE
      default: "true"
    - name: RETRIES
      default: 3
    - name: LEVEL
      enum: [low, high]
      default: low
  workspaces:
    - name: source
      description: the sources
      mountPath: /workspace/src
    - name: dockerconfig
      optional: true
      readOnly: true
  results:
    - name: IMAGE_DIGEST
      description: digest of the image
    - name: IMAGE_REF
      type: object
      properties:
        url: {}
        digest: {type: string}
  volumes:
    - name: varlibcontainers
      emptyDir: {}
    - name: scripts
      configMap:
        name: build-scripts
        defaultMode: 0755
  stepTemplate:
    env:
      - name: HOME
        value: /tekton/home
    securityContext:
      runAsNonRoot: true
      runAsUser: 1000
    computeResources:
      requests:
        memory: 512Mi
  steps:
    - name: build
      image: quay.io/buildah/stable:v1.35@sha256:7b5a2b3e1b8c2c4f0e9d8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d
      workingDir: $(workspaces.source.path)
      env:
        - name: STORAGE_DRIVER
          value: vfs
        - name: POD_NAME
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
        - name: TOKEN
          valueFrom:
            secretKeyRef: {name: creds, key: token, optional: true}
      computeResources:
        limits:
          cpu: "2"
          memory: 4Gi
        requests:
          cpu: 500m
          memory: 1.5Gi
          ephemeral-storage: 10G
      securityContext:
        capabilities:
          add: [SETFCAP]
        privileged: false
        seccompProfile: {type: RuntimeDefault}
      volumeMounts:
        - name: varlibcontainers
          mountPath: /var/lib/containers
        - name: scripts
          mountPath: /scripts
          readOnly: true
      timeout: 1h30m
      onError: continue
      script: |
        #!/usr/bin/env bash
        set -euo pipefail
        if [[ "$(params.VERBOSE)" == "true" && -n "\${HOME}" ]]; then set -x; fi
        buildah bud "$@" -t "$(params.IMAGE)" . > /tmp/out 2>&1 <<< "é"
    - name: push
      image: quay.io/buildah/stable:v1.35
      command: [buildah, push]
      args: ["$(params.BUILD_ARGS[*])"]
      stdoutConfig: {path: $(results.IMAGE_DIGEST.path)}
      timeout: 90s
      when:
        - input: "$(params.VERBOSE)"
          operator: in
          values: ["true"]
  sidecars:
    - name: registry
      image: registry:2
      ports:
        - containerPort: 5000
          protocol: TCP
      readinessProbe:
        httpGet:
          path: /v2/
          port: 5000
        periodSeconds: 2
      livenessProbe:
        tcpSocket:
          port: http
      computeResources:
        limits: {memory: 256Mi, cpu: 0.25}
`;

const PIPELINE = `apiVersion: tekton.dev/v1
kind: Pipeline
metadata:
  name: release
  labels: {tier: "<gold>"}
spec:
  displayName: Release & publish
  params:
    - name: revision
      default: main
    - name: platforms
      type: array
      default: [linux/amd64, linux/arm64]
    - name: opts
      properties: {force: {}}
  workspaces:
    - name: shared
    - name: cache
      optional: true
  results:
    - name: digest
      value: $(tasks.build.results.IMAGE_DIGEST)
    - name: refs
      type: array
      value: ["$(tasks.build.results.IMAGE_REF.url)"]
  tasks:
    - name: clone
      taskRef:
        resolver: git
        params:
          - name: url
            value: https://github.com/tektoncd/catalog.git
          - name: pathInRepo
            value: task/git-clone/0.9/git-clone.yaml
          - name: revision
            value: $(params.revision)
      params:
        - name: url
          value: https://example.com/repo.git
      workspaces:
        - name: output
          workspace: shared
          subPath: src
      retries: 2
      timeout: 10m
    - name: build
      runAfter: [clone]
      taskRef:
        name: build-and-push
      matrix:
        params:
          - name: platform
            value: $(params.platforms[*])
        include:
          - name: extra
            params:
              - {name: platform, value: linux/s390x}
      params:
        - name: BUILD_ARGS
          value: ["--squash", "$(params.platforms[*])"]
        - name: CONFIG
          value: {registry: quay.io, insecure: "false"}
      when:
        - input: $(params.revision)
          operator: notin
          values: [""]
        - cel: "'$(params.revision)' != 'skip'"
    - name: inline
      displayName: Inline & <embedded>
      taskSpec:
        metadata:
          labels: {inline: "yes"}
        params:
          - name: msg
            default: hello <world>
        steps:
          - name: echo
            image: alpine:3.20
            script: echo "$(params.msg)" && exit 0
        results:
          - name: out
      params:
        - name: msg
          value: $(tasks.clone.results.commit)
    - name: custom
      taskSpec:
        apiVersion: example.dev/v1
        kind: Wait
        spec:
          duration: 5s
          z: [1, 2.5, "<x>"]
          a: {nested: true}
    - name: child
      pipelineRef:
        resolver: bundles
        params:
          - {name: bundle, value: "quay.io/org/p:1.0"}
  finally:
    - name: notify
      taskRef:
        kind: Task
        name: notify
      params:
        - name: status
          value: $(tasks.status)
`;

const STEPACTION = `apiVersion: tekton.dev/v1beta1
kind: StepAction
metadata:
  name: git-clone
  annotations: {"a&b": "c<d>"}
spec:
  description: Clones a repository
  image: cgr.dev/chainguard/git@sha256:0f0e0d0c0b0a09080706050403020100f0e0d0c0b0a09080706050403020100
  params:
    - name: url
    - name: depth
      default: "1"
    - name: flags
      type: array
      default: []
  results:
    - name: commit
    - name: meta
      properties: {author: {}}
  env:
    - name: DEPTH
      value: $(params.depth)
  securityContext:
    runAsUser: 65532
  volumeMounts:
    - {name: ssh, mountPath: /root/.ssh}
  script: |
    git clone --depth "$DEPTH" "$(params.url)" .
    printf '%s' "$(git rev-parse HEAD)" > "$(step.results.commit.path)"
`;

/** The odd corners of the custom marshallers. */
const ODDITIES = `apiVersion: tekton.dev/v1
kind: Task
metadata:
  name: odd
  creationTimestamp: "2024-02-29T23:59:59.5+01:00"
spec:
  params:
    - name: nums
      default: [1, "two", 3.5]
    - name: mixed
      default: {a: 1, b: "<b>"}
    - name: flag
      default: true
  volumes:
    - name: eph
      ephemeral:
        volumeClaimTemplate:
          metadata:
            labels: {x: z}
            creationTimestamp: "2024-01-01T00:00:00Z"
          spec:
            accessModes: [ReadWriteOnce]
            resources:
              requests: {storage: 1000Mi}
  steps:
    - name: a
      image: busybox
      timeout: 0.5h1.5s100ms
      computeResources:
        limits: {cpu: "1000m", memory: "1024Ki", hugepages-2Mi: "+1Gi", nvidia.com/gpu: "01"}
        requests: {cpu: "0.1", memory: "1e3", ephemeral-storage: " 1.5G ", custom: 1e-10}
  sidecars:
    - name: s
      image: busybox
      startupProbe:
        grpc: {port: 9000}
        terminationGracePeriodSeconds: 30
      lifecycle:
        preStop:
          sleep: {seconds: 5}
`;

const FIXTURES: Record<string, string> = { task: TASK, pipeline: PIPELINE, stepaction: STEPACTION, oddities: ODDITIES };

// ------------------------------------------------------------------ tests

before(() => {
  tools = buildTools();
  work = mkdtempSync(join(tmpdir(), 'trusted-test-'));
  pairs = [
    makePair('ecdsa-p256', generateKeyPairSync('ec', { namedCurve: 'P-256' })),
    makePair('rsa-2048', generateKeyPairSync('rsa', { modulusLength: 2048 })),
    makePair('ed25519', generateKeyPairSync('ed25519')),
    makePair('ecdsa-p384', generateKeyPairSync('ec', { namedCurve: 'P-384' })),
  ];
});

after(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

test('trusted: src/policy/tekton-shapes.ts and kubernetes-shapes.ts are what hack/trusted/gen-shapes writes', () => {
  for (const part of ['tekton', 'kubernetes']) {
    const generated = run(tools.genShapes, [part]);
    const committed = readFileSync(join(ROOT, `src/policy/${part}-shapes.ts`), 'utf8');
    assert.ok(generated === committed, `src/policy/${part}-shapes.ts is stale: cd hack/trusted && go run ./gen-shapes ${part} > ../../src/policy/${part}-shapes.ts`);
  }
});

test('trusted: the checksum is Tekton\'s, byte for byte, for realistic Task, Pipeline and StepAction', () => {
  for (const [name, text] of Object.entries(FIXTURES)) assertSameChecksum(name, file(`${name}.yaml`, text));
});

test('trusted: content signed by Tekton\'s code verifies with the key that signed it, and only that key', () => {
  const keys = pairs.map((p) => p.key);
  for (const [name, text] of Object.entries(FIXTURES)) {
    const path = file(`${name}.yaml`, text);
    assert.deepEqual(verifySignature(yaml11(text), keys), { state: 'unsigned' }, `${name} unsigned`);
    for (const p of pairs) {
      const signed = yaml11(run(tools.sign, ['--key', p.privatePath, path]));
      assert.equal(typeof (signed['metadata'] as { annotations: Record<string, unknown> }).annotations[SIGNATURE_ANNOTATION], 'string');
      assert.deepEqual(verifySignature(signed, keys), { state: 'signed', key: p.name }, `${name} signed by ${p.name}`);
      const others = pairs.filter((o) => o !== p).map((o) => o.key);
      const r = verifySignature(signed, others);
      assert.equal(r.state, 'invalid', `${name} signed by ${p.name}, verified with the others`);
      for (const o of others) assert.match((r as { why: string }).why, new RegExp(o.name), 'the keys tried are named');
    }
  }
});

test('trusted: a change after signing is invalid; reordered keys, kubectl\'s annotation and explicit defaults are not changes', () => {
  const [ec, rsa] = pairs;
  const keys = [ec!.key, rsa!.key];
  const signed = yaml11(run(tools.sign, ['--key', ec!.privatePath, file('task.yaml', TASK)]));
  const clone = (): Record<string, any> => structuredClone(signed) as Record<string, any>;
  const ok = { state: 'signed', key: ec!.name };
  assert.deepEqual(verifySignature(signed, keys), ok);

  const script = clone();
  script['spec'].steps[0].script = script['spec'].steps[0].script.replace('set -x', 'set -y');
  assert.equal(verifySignature(script, keys).state, 'invalid', 'one character of a step script');
  const label = clone();
  label['metadata'].labels['extra'] = 'x';
  assert.equal(verifySignature(label, keys).state, 'invalid', 'an added label');
  const quantity = clone();
  quantity['spec'].steps[0].computeResources.limits.cpu = '3';
  assert.equal(verifySignature(quantity, keys).state, 'invalid', 'a changed limit');
  const unknown = clone();
  unknown['spec'].steps[0].imagePullSecret = 'x';
  const u = verifySignature(unknown, keys);
  assert.equal(u.state, 'invalid');
  assert.match((u as { why: string }).why, /imagePullSecret: unknown field/);

  // YAML key order is not part of what Go marshals.
  const reverse = (v: unknown): unknown =>
    Array.isArray(v) ? v.map(reverse) : v !== null && typeof v === 'object' ? Object.fromEntries(Object.entries(v).reverse().map(([k, e]) => [k, reverse(e)])) : v;
  const reordered = yaml11(stringify(reverse(signed), { version: '1.1' }));
  assert.notDeepEqual(Object.keys(reordered), Object.keys(signed));
  assert.deepEqual(verifySignature(reordered, keys), ok, 'reordered keys');

  const applied = clone();
  applied['metadata'].annotations['kubectl-client-side-apply'] = 'x';
  assert.deepEqual(verifySignature(applied, keys), ok, 'annotations kubectl adds are left out');
  const explicit = clone();
  for (const p of explicit['spec'].params) p.type ??= p.default === undefined || typeof p.default !== 'object' ? 'string' : Array.isArray(p.default) ? 'array' : 'object';
  explicit['spec'].results[0].type = 'string';
  assert.deepEqual(verifySignature(explicit, keys), ok, 'what SetDefaults would set');

  // sigstore also takes ECDSA signatures as r ‖ s.
  const der = Buffer.from((signed['metadata'] as any).annotations[SIGNATURE_ANNOTATION], 'base64');
  const p1363 = clone();
  p1363['metadata'].annotations[SIGNATURE_ANNOTATION] = derToP1363(der, 32).toString('base64');
  assert.deepEqual(verifySignature(p1363, keys), ok, 'IEEE P1363 signature');

  const garbled = clone();
  garbled['metadata'].annotations[SIGNATURE_ANNOTATION] = 'not base64!';
  assert.match((verifySignature(garbled, keys) as { why: string }).why, /not valid base64/);
  const empty = clone();
  empty['metadata'].annotations[SIGNATURE_ANNOTATION] = '';
  assert.equal(verifySignature(empty, keys).state, 'invalid');
  assert.equal(verifySignature(signed, []).state, 'invalid', 'no keys');
  const sha384 = verifySignature(signed, [{ ...ec!.key, hashAlgorithm: 'sha384' }]);
  assert.equal(sha384.state, 'invalid', 'the policy\'s hash algorithm is used');
  const broken = verifySignature(signed, [{ name: 'broken', publicKey: 'nope' }, ec!.key]);
  assert.deepEqual(broken, ok, 'an unusable key does not hide a good one');
});

test('trusted: as in Tekton, what is signed is the defaulted resource: tkn-style signatures need explicit defaults', () => {
  // `sign --no-defaults` signs the resource as decoded, as tkn does; Tekton verifies it after SetDefaults.
  const [ec] = pairs;
  const untyped = file('untyped.yaml', STEPACTION);
  const typed = file('typed.yaml', STEPACTION.replace('    - name: url\n', '    - name: url\n      type: string\n').replace('    - name: depth\n', '    - name: depth\n      type: string\n')
    .replace('    - name: commit\n', '    - name: commit\n      type: string\n').replace('      properties: {author: {}}', '      type: object\n      properties: {author: {type: string}}'));
  const tknStyle = (path: string): Record<string, unknown> => yaml11(run(tools.sign, ['--no-defaults', '--key', ec!.privatePath, path]));
  assert.equal(verifySignature(tknStyle(untyped), [ec!.key]).state, 'invalid', 'SetDefaults adds the types: Tekton rejects this signature too');
  assert.deepEqual(verifySignature(tknStyle(typed), [ec!.key]), { state: 'signed', key: ec!.name }, 'nothing for SetDefaults to add');
  assert.equal(goChecksum(typed), goChecksum(untyped), 'the same resource once defaulted');
});

test('trusted: a signature made here with node:crypto over tektonChecksum verifies with sigstore semantics', () => {
  // ECDSA and RSA sign sha256(checksum), ed25519 the checksum itself: what sigstore's signers do.
  const obj = yaml11(PIPELINE);
  const sum = tektonChecksum(obj) as Buffer;
  for (const p of pairs) {
    const sig = nodeSign(p.name === 'ed25519' ? null : 'sha256', sum, p.privateKey);
    const o = structuredClone(obj) as Record<string, any>;
    o['metadata'].annotations = { [SIGNATURE_ANNOTATION]: sig.toString('base64') };
    assert.deepEqual(verifySignature(o, [p.key]), { state: 'signed', key: p.name }, p.name);
  }
});

test('trusted: parsePublicKey explains what it refuses', () => {
  for (const p of pairs) assert.equal(parsePublicKey(p.key.publicKey).ok, true, p.name);
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pkcs1 = parsePublicKey(rsa.publicKey.export({ type: 'pkcs1', format: 'pem' }) as string);
  assert.equal(pkcs1.ok && pkcs1.detail, 'RSA 2048 bits');
  const why = (pem: string): string => {
    const r = parsePublicKey(pem);
    assert.equal(r.ok, false, pem);
    return (r as { why: string }).why;
  };
  assert.match(why(pairs[0]!.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string), /private key/);
  assert.match(why('hello'), /not a PEM public key/);
  assert.match(why('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n'), /certificate/);
  const small = generateKeyPairSync('rsa', { modulusLength: 512 });
  assert.match(why(small.publicKey.export({ type: 'spki', format: 'pem' }) as string), /512 bits/);
  const k1 = generateKeyPairSync('ec', { namedCurve: 'secp256k1' });
  assert.match(why(k1.publicKey.export({ type: 'spki', format: 'pem' }) as string), /curve secp256k1 is not supported/);
  const x = generateKeyPairSync('x25519');
  assert.match(why(x.publicKey.export({ type: 'spki', format: 'pem' }) as string), /x25519 keys are not supported/);
});

test('trusted: what cannot be checksummed as Tekton would is an error, never a guess', () => {
  const base = yaml11(TASK);
  const bad = (mutate: (o: Record<string, any>) => void): string => {
    const o = structuredClone(base) as Record<string, any>;
    mutate(o);
    const r = tektonChecksum(o);
    assert.ok(!Buffer.isBuffer(r), JSON.stringify(o).slice(0, 200));
    return r.error;
  };
  assert.match(bad((o) => (o['apiVersion'] = 'tekton.dev/v1beta1')), /not a kind signatures are checked on/);
  assert.match(bad((o) => (o['spec'].steps[0].name = 7)), /want a string/);
  assert.match(bad((o) => (o['spec'].steps[0].timeout = '5 minutes')), /invalid duration/);
  assert.match(bad((o) => (o['spec'].steps[0].computeResources.limits.cpu = '2 cores')), /quantity/);
  assert.match(bad((o) => (o['spec'].steps[0].script = 'lone \ud800 surrogate')), /surrogate/);
  assert.match(bad((o) => (o['spec'].status = {})), /unknown field/);
  assert.match(bad((o) => (o['metadata'].labels.when = new Date(0))), /date/);
});

// ------------------------------------------------------------------ property test

const numRuns = Number(process.env['FC_NUM_RUNS'] ?? 300);
const seed = process.env['FC_SEED'] !== undefined ? Number(process.env['FC_SEED']) : Date.now() % 2 ** 31;

const HOSTILE = ['<', '>', '&', '"', "'", '\\', '\n', '\t', '\r', '\b', '\f', '\u0000', '\u001f', '\u007f', '\u0085', '\u00a0', '\u2028', '\u2029', 'é', '構', '🚀', '\ufeff', ' ', '$(params.x)', '${HOME}', '{', '}', '[', ']', ':', '#', '-', 'a', 'Z', '0', 'true', 'null'];
const text = fc.oneof(
  fc.array(fc.constantFrom(...HOSTILE), { maxLength: 12 }).map((a) => a.join('')),
  fc.string({ unit: 'binary', maxLength: 16 }),
  fc.string({ maxLength: 16 }),
);
const name = fc.oneof(fc.stringMatching(/^[a-z][a-z0-9-]{0,12}$/), text);
const digits = (max: number): fc.Arbitrary<string> => fc.array(fc.constantFrom(...'0123456789'), { minLength: 0, maxLength: max }).map((a) => a.join(''));
const quantity: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(fc.constantFrom('', '', '', '+', '-'), digits(20), fc.option(digits(12)), fc.constantFrom('', '', 'n', 'u', 'm', 'k', 'M', 'G', 'T', 'P', 'E', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei', 'e3', 'E-2', 'e+5', 'e0', 'e-12', 'e25', 'E'), fc.constantFrom('', '', '', ' ')).map(([s, n, d, x, sp]) => `${sp}${s}${n}${d === null ? '' : `.${d}`}${x}${sp}`) },
  { weight: 2, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e22, max: 1e22 }) },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 2 ** 40 }) },
  { weight: 2, arbitrary: fc.constantFrom('500m', '1Gi', '0', '0.5', '1.5Gi', '1000m', '1024Ki', '1.', '.5', '1e', '1Mi5', 'x', '9223372036854775807', '9223372036854775808', '8Ei', '1024Ei', '0.000000000001', '-0.1n', '1.0000000001Ki', '999999999999999999999') },
);
const durationPart = fc.tuple(digits(4), fc.option(digits(4)), fc.constantFrom('h', 'm', 's', 'ms', 'us', 'µs', 'μs', 'ns', 'd', ''));
const duration: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 5, arbitrary: fc.tuple(fc.constantFrom('', '', '-', '+'), fc.array(durationPart, { minLength: 1, maxLength: 3 })).map(([s, parts]) => s + parts.map(([i, f, u]) => `${i}${f === null ? '' : `.${f}`}${u}`).join('')) },
  { weight: 1, arbitrary: fc.constantFrom('0', '1h', '90m', '1.5h', '100ms', '2562047h47m16.854775807s', '2562047h47m16.854775808s', '-2562047h47m16.854775808s', '', 5) },
);
const paramValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: text },
  { weight: 2, arbitrary: fc.array(text, { maxLength: 3 }) },
  { weight: 2, arbitrary: fc.dictionary(name, text, { maxKeys: 3 }) },
  { weight: 1, arbitrary: fc.oneof(fc.integer(), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean(), fc.constant(null)) },
  { weight: 1, arbitrary: fc.array(fc.oneof(text, fc.integer(), fc.boolean(), fc.constant(null), fc.dictionary(name, fc.integer(), { maxKeys: 2 })), { maxLength: 3 }) },
  { weight: 1, arbitrary: fc.dictionary(name, fc.oneof(text, fc.integer(), fc.constant(null)), { maxKeys: 3 }) },
);
const opt = <T>(a: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> => fc.option(a, { nil: undefined, freq: 2 });
const properties = opt(fc.dictionary(name, fc.oneof(fc.constant({}), fc.record({ type: fc.constantFrom('string', 'array', '') })), { maxKeys: 3 }));
const paramSpec = fc.record(
  { name, type: opt(fc.constantFrom('string', 'array', 'object', '', 'weird')), description: opt(text), properties, default: opt(paramValue), enum: opt(fc.array(text, { maxLength: 2 })) },
  { requiredKeys: ['name'] },
);
const resources = fc.dictionary(fc.constantFrom('cpu', 'memory', 'ephemeral-storage', 'nvidia.com/gpu', 'hugepages-2Mi'), quantity, { maxKeys: 3 });
const step = fc.record(
  {
    name,
    image: opt(text),
    script: opt(text),
    args: opt(fc.array(text, { maxLength: 3 })),
    env: opt(fc.array(fc.record({ name, value: opt(text) }, { requiredKeys: ['name'] }), { maxLength: 2 })),
    computeResources: opt(fc.record({ limits: opt(resources), requests: opt(resources) }, { requiredKeys: [] })),
    timeout: opt(duration),
    securityContext: opt(fc.record({ runAsUser: opt(fc.integer({ min: 0, max: 2 ** 40 })), privileged: opt(fc.boolean()), runAsNonRoot: opt(fc.boolean()) }, { requiredKeys: [] })),
    onError: opt(fc.constantFrom('continue', 'stopAndFail')),
    workspaces: opt(fc.array(fc.record({ name, mountPath: text }), { maxLength: 1 })),
    results: opt(fc.array(fc.record({ name, type: opt(fc.constantFrom('string', 'object')), properties }, { requiredKeys: ['name'] }), { maxLength: 2 })),
  },
  { requiredKeys: ['name'] },
);
const sidecar = fc.record(
  { name, image: opt(text), readinessProbe: opt(fc.record({ httpGet: fc.record({ port: fc.oneof(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), name), path: opt(text) }, { requiredKeys: ['port'] }), periodSeconds: opt(fc.integer({ min: 0, max: 100 })) }, { requiredKeys: [] })), computeResources: opt(fc.record({ limits: opt(resources) }, { requiredKeys: [] })) },
  { requiredKeys: ['name'] },
);
const stringMap = fc.dictionary(text, text, { maxKeys: 4 });
const task = fc.record({
  apiVersion: fc.constant('tekton.dev/v1'),
  kind: fc.constant('Task'),
  metadata: fc.record({ name, namespace: opt(name), labels: opt(stringMap), annotations: opt(stringMap) }, { requiredKeys: ['name'] }),
  spec: fc.record(
    {
      description: opt(text),
      params: opt(fc.array(paramSpec, { maxLength: 4 })),
      steps: opt(fc.array(step, { maxLength: 3 })),
      sidecars: opt(fc.array(sidecar, { maxLength: 1 })),
      stepTemplate: opt(fc.record({ image: opt(text), env: opt(fc.array(fc.record({ name, value: opt(text) }, { requiredKeys: ['name'] }), { maxLength: 2 })) }, { requiredKeys: [] })),
      results: opt(fc.array(fc.record({ name, type: opt(fc.constantFrom('string', 'array', 'object', '')), properties, description: opt(text) }, { requiredKeys: ['name'] }), { maxLength: 3 })),
      workspaces: opt(fc.array(fc.record({ name, optional: opt(fc.boolean()), readOnly: opt(fc.boolean()) }, { requiredKeys: ['name'] }), { maxLength: 2 })),
      volumes: opt(fc.array(fc.record({ name, configMap: fc.record({ name, defaultMode: opt(fc.integer({ min: 0, max: 511 })) }, { requiredKeys: ['name'] }) }), { maxLength: 1 })),
    },
    { requiredKeys: [] },
  ),
});

/** Drop the keys fc.record leaves undefined, as a parsed document would not have them. */
function clean(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(clean);
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).filter(([, e]) => e !== undefined).map(([k, e]) => [k, clean(e)]));
  return v;
}

test('trusted: property: random Tasks checksum as Tekton\'s code does (one Go process for the batch)', () => {
  const cases = fc.sample(task, { numRuns, seed }).map((t) => clean(t) as Record<string, unknown>);
  const out = run(tools.sign, ['--checksum-batch', '--with-json'], `${cases.map((c) => JSON.stringify(c)).join('\n')}\n`).trim().split('\n');
  assert.equal(out.length, cases.length, 'one answer a case');
  let compared = 0;
  let bothRefused = 0;
  const wrong: string[] = [];
  cases.forEach((c, i) => {
    const go = JSON.parse(out[i]!) as { checksum?: string; json?: string; error?: string };
    const ts = tektonChecksumJson(c);
    const tsSum = 'json' in ts ? createHash('sha256').update(ts.json).digest('hex') : undefined;
    if (go.checksum !== undefined && tsSum === go.checksum) compared++;
    else if (go.error !== undefined && 'error' in ts) bothRefused++;
    else if (go.checksum !== undefined && 'json' in ts) wrong.push(`case ${i}: checksums differ, ${firstDifference(go.json!, ts.json)}`);
    else wrong.push(`case ${i}: go ${go.error !== undefined ? `refuses: ${go.error}` : 'checksums it'}; trusted.ts ${'error' in ts ? `refuses: ${ts.error}` : 'checksums it'}\n  ${JSON.stringify(c).slice(0, 600)}`);
  });
  console.log(`property trusted checksum: ${compared} compared equal, ${bothRefused} refused by both, ${wrong.length} disagreements of ${cases.length} cases (FC_SEED=${seed})`);
  assert.deepEqual(wrong.slice(0, 5), [], `FC_SEED=${seed}`);
  assert.ok(compared >= Math.min(50, Math.floor(numRuns / 2)), `only ${compared} cases compared (FC_SEED=${seed}): the generators mostly make content Tekton refuses`);
});

/** A DER ECDSA signature as r ‖ s of n bytes each. */
function derToP1363(der: Buffer, n: number): Buffer {
  let at = 2;
  if (der[1]! & 0x80) at += der[1]! & 0x7f;
  const out: Buffer[] = [];
  for (let i = 0; i < 2; i++) {
    const len = der[at + 1]!;
    let v = der.subarray(at + 2, at + 2 + len);
    while (v.length > n && v[0] === 0) v = v.subarray(1);
    out.push(Buffer.concat([Buffer.alloc(n - v.length), v]));
    at += 2 + len;
  }
  return Buffer.concat(out);
}

test('trusted: hack/trusted pins the module versions of Tekton\'s own build (so the two share the Go build cache)', () => {
  // Every module both go.mod files name must be at one version: a package
  // compiled for one build is then a cache hit for the other (same flags,
  // test/trusted-tools.ts). A drift here costs minutes of a cold CI, silently.
  const versions = (file: string): Map<string, string> => {
    const out = new Map<string, string>();
    for (const m of readFileSync(join(ROOT, file), 'utf8').matchAll(/^\s*(?:require\s+)?([\w./~-]+\.[\w./~-]+)\s+(v\S+)/gm)) out.set(m[1]!, m[2]!);
    return out;
  };
  const tekton = versions('hack/envtest/tekton/go.mod');
  const trusted = versions('hack/trusted/go.mod');
  const common = [...trusted.keys()].filter((k) => tekton.has(k));
  assert.ok(common.length > 100 && tekton.get('github.com/tektoncd/pipeline') === trusted.get('github.com/tektoncd/pipeline'), `both pin github.com/tektoncd/pipeline and share their dependencies (${common.length} in common)`);
  const differ = common.filter((k) => tekton.get(k) !== trusted.get(k)).map((k) => `${k}: ${trusted.get(k)} (hack/trusted) vs ${tekton.get(k)} (hack/envtest/tekton)`);
  assert.deepEqual(differ, [], 'align hack/trusted/go.mod with hack/envtest/tekton/go.mod (go get the same versions, go mod tidy)');
});
