/**
 * `verify`: checks the attestation Tekton Chains signed for a request's
 * PipelineRun, as the controller relayed it into status.attestation, with
 * the public key the internal cluster's administrators publish:
 *
 * 1. the DSSE signature over PAE(payloadType, payload) verifies with --key;
 * 2. status.attestation.digest is the sha256 of that signed payload;
 * 3. the signed statement is about this request (its PipelineRun carries the
 *    request's uid, name and namespace) and says what ran: the Pipeline, and
 *    for a resolved one its source and the commit or digest it was pinned to,
 *    which must be what status.pipeline says.
 *
 * Exit codes: 0 verified; 3 not verified (a bad signature — tampered or the
 * wrong key —, a digest or provenance that does not match); 4 no attestation
 * (not yet, Chains did not sign, or it was too large to relay); 2 bad input
 * (no such request, unreadable key). `verifyAttestation` is the pure part.
 */
import { readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import type { KeyObject } from 'node:crypto';
import { decodeBase64, IN_TOTO_PAYLOAD_TYPE, parseEnvelope, publicKeyDigest, readPublicKey, sha256Hex, sshFingerprint, summarizeProvenance, verifyEnvelope, type ProvenanceSummary } from '../../tekton/chains.js';
import { ANNOTATION_REQUEST_NAME, ANNOTATION_REQUEST_NAMESPACE, ANNOTATION_SOURCES, LABEL_REQUEST_UID, pipelineRunName } from '../../tekton/pipelinerun.js';
import type { Provenance } from '../../tekton/graph-model.js';
import { isFinished } from '../../api/conditions.js';
import { CliError, requestRef, type RequestObject } from './args-output.js';
import { apiError } from './target.js';
import { run, stdout, withKindOption, withTarget, withTargetOptions, type KindFlags } from './command-base.js';
import type { TargetFlags } from './target.js';

/** verify's own exit codes (besides 0, 1 and 2). */
export const VerifyExit = { NotVerified: 3, NoAttestation: 4 } as const;

export interface Verified {
  request: string;
  uid: string;
  digest: string;
  keyId: string | undefined;
  key: { fingerprint: string | undefined; digest: string };
  payloadType: string;
  provenance: ProvenanceSummary;
  /** What the signed statement says ran, one line each. */
  ran: string[];
  /** The checks made, one line each, all passed. */
  checks: string[];
}

const notVerified = (msg: string): CliError => new CliError('CLI_ATTESTATION_INVALID', msg, VerifyExit.NotVerified);
const noAttestation = (msg: string): CliError => new CliError('CLI_ATTESTATION_MISSING', msg, VerifyExit.NoAttestation);

const describeSource = (p: { resolver?: string | undefined; source?: string | undefined; path?: string | undefined; revision?: string | undefined; digest?: string | undefined }): string =>
  [p.resolver, p.source, p.path, p.revision ? `revision ${p.revision}` : undefined, p.digest ? `pinned ${p.digest}` : undefined].filter(Boolean).join(' ');

/** The digests of a material as "algo:hex" strings. */
const digestsOf = (m: { digest: Record<string, string> }): string[] => Object.entries(m.digest).map(([k, v]) => `${k}:${v}`);

/** The pure part of verify: throws a CliError (exit 3 or 4) unless the request's attestation verifies with `key`. */
export function verifyAttestation(req: RequestObject, key: KeyObject): Verified {
  const ref = requestRef(req);
  const att = req.status?.attestation;
  if (!att) {
    if (!isFinished(req)) throw noAttestation(`${ref} has no attestation yet: it has not finished (an attestation comes after the outcome)`);
    throw noAttestation(`${ref} has no attestation: the internal cluster relays none (Tekton Chains is not configured there, spec.chains), or not yet (it comes shortly after the outcome; try again)`);
  }
  if (att.state !== 'Signed') throw noAttestation(`${ref} has no attestation (${att.state}): ${att.message ?? 'no reason given'}`);
  if (!att.envelope) throw noAttestation(`${ref} was signed (payload ${att.digest ?? '?'}), but the envelope was not relayed: ${att.message ?? 'too large'}`);
  const raw = decodeBase64(att.envelope);
  if (!raw) throw notVerified(`${ref}: status.attestation.envelope is not base64`);
  const envelope = parseEnvelope(raw.toString('utf8'));
  if (typeof envelope === 'string') throw notVerified(`${ref}: status.attestation.envelope is not a DSSE envelope: ${envelope}`);

  const fingerprint = sshFingerprint(key);
  const keyName = `${fingerprint ?? 'this key'} (${publicKeyDigest(key)})`;
  const checked = verifyEnvelope(envelope, key);
  if (!checked.ok) {
    const ids = envelope.signatures.map((s) => s.keyid).filter(Boolean);
    const other = fingerprint && ids.length && !ids.includes(fingerprint) ? `; the envelope names key ${ids.join(', ')}, --key is ${fingerprint}: the wrong key?` : '; the envelope names this key: it was altered after signing';
    throw notVerified(`${ref}: the signature does not verify with ${keyName}: ${checked.why}${other}`);
  }
  const checks = [`DSSE signature over the payload (PAE, ${envelope.payloadType}) is valid for ${keyName}`];
  if (envelope.payloadType !== IN_TOTO_PAYLOAD_TYPE) throw notVerified(`${ref}: the payload type is ${JSON.stringify(envelope.payloadType)}, not ${IN_TOTO_PAYLOAD_TYPE}`);
  const digest = `sha256:${sha256Hex(checked.payload)}`;
  if (att.digest !== digest) throw notVerified(`${ref}: status.attestation.digest is ${att.digest ?? 'missing'}, but the signed payload is ${digest}`);
  checks.push(`status.attestation.digest ${digest} is the sha256 of the signed payload`);

  const p = summarizeProvenance(checked.payload);
  if (typeof p === 'string') throw notVerified(`${ref}: ${p}`);
  // About this request: the run's labels and annotations, as signed.
  const uid = req.metadata.uid ?? '';
  const signedUid = p.labels[LABEL_REQUEST_UID];
  if (signedUid !== uid) throw notVerified(`${ref}: the signed provenance is about another request (uid ${signedUid ?? 'none'}, this one is ${uid})`);
  const signedName = `${p.annotations[ANNOTATION_REQUEST_NAMESPACE] ?? ''}/${p.annotations[ANNOTATION_REQUEST_NAME] ?? ''}`;
  if (signedName !== `${req.metadata.namespace ?? ''}/${req.metadata.name ?? ''}`) throw notVerified(`${ref}: the signed provenance names request ${signedName}`);
  checks.push(`the statement is about this request (uid ${uid})`);

  // What ran, and whether it is what status.pipeline says.
  const ran: string[] = [];
  const pipelineLabel = p.labels['tekton.dev/pipeline'];
  let sources: Provenance[] = [];
  if (p.annotations[ANNOTATION_SOURCES]) {
    try {
      const v = JSON.parse(p.annotations[ANNOTATION_SOURCES]) as unknown;
      if (Array.isArray(v)) sources = v as Provenance[];
    } catch {
      throw notVerified(`${ref}: the signed annotation ${ANNOTATION_SOURCES} is not JSON`);
    }
  }
  const top = sources.find((s) => s.ref === 'spec.pipeline.pipelineRef');
  const shown = req.status?.pipeline;
  if (top) ran.push(`pipeline: ${describeSource(top)} (resolved, checked and pinned by the controller; run as PipelineRun ${pipelineLabel ?? '?'})`);
  else if (p.configSource) ran.push(`pipeline: ${p.configSource.uri ?? '?'} ${p.configSource.entryPoint ?? ''} ${Object.entries(p.configSource.digest ?? {}).map(([k, v]) => `${k}:${v}`).join(' ')} (resolved by Tekton)`);
  else if (pipelineLabel === pipelineRunName(uid)) ran.push(`pipeline: run embedded, as the controller checked and pinned it (an installed Pipeline whose references had to be pinned; its name is not in the provenance)`);
  else ran.push(`pipeline: ${pipelineLabel ?? '?'} (installed in the controller's namespace, run by name: no source digest)`);
  if (shown && (shown.source || shown.digest)) {
    if (!top) throw notVerified(`${ref}: status.pipeline says ${describeSource(shown)}, but the signed provenance records no resolved Pipeline`);
    for (const f of ['resolver', 'source', 'path', 'revision', 'digest'] as const) {
      if ((shown[f] ?? undefined) !== (top[f] ?? undefined)) throw notVerified(`${ref}: status.pipeline.${f} is ${JSON.stringify(shown[f] ?? null)}, the signed provenance says ${JSON.stringify(top[f] ?? null)}`);
    }
    checks.push(`status.pipeline (${describeSource(shown)}) is what the signed provenance records`);
  } else if (top) {
    throw notVerified(`${ref}: the signed provenance records a resolved Pipeline (${describeSource(top)}), status.pipeline does not`);
  } else {
    const spec = (req.spec ?? {}) as { request?: string; pipeline?: { pipelineRef?: { name?: string } } };
    const asked = spec.request ?? spec.pipeline?.pipelineRef?.name;
    if (asked !== undefined && pipelineLabel !== pipelineRunName(uid)) {
      if (asked !== pipelineLabel) throw notVerified(`${ref}: the request names Pipeline ${JSON.stringify(asked)}, the signed provenance ran ${JSON.stringify(pipelineLabel ?? null)}`);
      checks.push(`the Pipeline the request names (${asked}) is the one that ran`);
    }
  }
  const materialDigests = new Set(p.materials.flatMap(digestsOf));
  const refs = shown?.references ?? [];
  const signedRefs = sources.filter((s) => s !== top);
  for (const r of refs) {
    const signed = signedRefs.find((s) => s.ref === r.ref);
    if (!signed || signed.digest !== r.digest || signed.source !== r.source || (signed.path ?? undefined) !== (r.path ?? undefined)) {
      throw notVerified(`${ref}: status.pipeline.references ${r.ref ?? '?'} (${describeSource(r)}) is not what the signed provenance records${signed ? ` (${describeSource(signed)})` : ''}`);
    }
    const seen = r.digest && materialDigests.has(r.digest) ? '; Tekton resolved it at that digest (a material)' : '';
    ran.push(`reference ${r.ref ?? '?'}: ${describeSource(r)}${seen}`);
  }
  if (refs.length) checks.push(`the ${refs.length} pinned reference(s) of status.pipeline.references are what the signed provenance records`);
  for (const m of p.materials) ran.push(`material: ${m.uri} ${digestsOf(m).join(' ')}`);
  for (const t of p.tasks) ran.push(`task: ${t.name}${t.status ? ` (${t.status})` : ''}`);
  if (p.startedOn || p.finishedOn) ran.push(`ran: ${p.startedOn ?? '?'} .. ${p.finishedOn ?? '?'}`);
  return { request: ref, uid, digest, keyId: checked.keyid, key: { fingerprint, digest: publicKeyDigest(key) }, payloadType: envelope.payloadType, provenance: p, ran, checks };
}

/** The report verify prints. */
export function formatVerified(v: Verified): string {
  const lines = [
    `verified: ${v.request}`,
    ...v.checks.map((c) => `  ok  ${c}`),
    `  statement: ${v.provenance.statementType ?? '?'}, predicate ${v.provenance.predicateType ?? '?'}, buildType ${v.provenance.buildType ?? '?'}, builder ${v.provenance.builder ?? '?'}`,
    ...v.ran.map((r) => `  ${r}`),
  ];
  return `${lines.join('\n')}\n`;
}

interface VerifyFlags extends TargetFlags, KindFlags {
  key: string;
  output: string;
}

export function verifyCommand(): Command {
  const cmd = new Command('verify')
    .description("Check the attestation Tekton Chains signed for a request's PipelineRun (status.attestation) with the signing public key, and print what it says ran")
    .argument('<request>', 'the request: NAME (with -n) or NAMESPACE/NAME')
    .requiredOption('--key <file>', 'the public key Chains signs with (PEM), as the administrators of the internal cluster publish it')
    .addOption(new Option('-o, --output <format>', 'text, or json (the checks and the provenance)').choices(['text', 'json']).default('text'));
  withKindOption(cmd);
  withTargetOptions(cmd);
  return cmd.action(
    run(async (ref: string, flags: VerifyFlags) => {
      const parts = ref.split('/');
      if (parts.length > 2 || parts.some((x) => !x)) throw new CliError('CLI_USAGE', `${JSON.stringify(ref)}: give the request as NAME (with -n) or NAMESPACE/NAME`);
      let key: KeyObject;
      try {
        key = readPublicKey(readFileSync(flags.key, 'utf8'));
      } catch (e) {
        throw new CliError('CLI_KEY_INVALID', `--key ${flags.key}: ${(e as Error).message}`);
      }
      if (parts.length === 2) flags.namespace = parts[0];
      const name = parts[parts.length - 1]!;
      return withTarget(flags, async (t) => {
        let req: RequestObject | undefined;
        try {
          req = await t.requests.tryGet(t.namespace, name);
        } catch (e) {
          throw apiError(e, t, `get ${t.kind.kind} ${t.namespace}/${name}`);
        }
        if (!req) throw new CliError('CLI_REQUEST_NOT_FOUND', `no ${t.kind.kind} "${name}" in namespace "${t.namespace}"`);
        const v = verifyAttestation(req, key);
        stdout(flags.output === 'json' ? `${JSON.stringify(v, null, 2)}\n` : formatVerified(v));
        return 0;
      });
    }),
  );
}
