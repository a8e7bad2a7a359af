/**
 * A name is not content: the two checks that bind a reference to what was
 * reviewed, beside the walk over the Pipeline (graph.ts) that applies them.
 *
 * - commitVerdict: a commit asked for by SHA runs only once the repository
 *   showed it reachable from a ref the rule allows (src/git/commit-checker.ts
 *   asks; the answer comes in as a value);
 * - checkSignature: where the rule asks for it, the resolved resource's
 *   tekton.dev/signature verifies against one of the rule's keys, over exactly
 *   the content that is pinned and runs (src/policy/trusted.ts);
 * - signersAfterCheck: which rule's keys those are when a commit asked for by
 *   SHA could be allowed by several rules: the rule whose refs the commit was
 *   found reachable from;
 * - contentVerdict: a file the http resolver fetched runs only if its bytes
 *   are ones a rule lists by sha256 (hashed here, over the bytes that are
 *   read and run, not taken from the resolver's report) or carry a signature
 *   by one of its keys.
 *
 * Pure: no I/O.
 */
import { createHash } from 'node:crypto';
import type { CommitAnswer, CommitCheck, ContentRule, SourceVerdict } from '../policy/source.js';
import { compileGlob, matchGlob } from '../policy/glob.js';
import { verifySignature, type TrustedKey } from '../policy/trusted.js';

const q = (s: string) => JSON.stringify(s);

function describeRefs(refs: readonly string[]): string {
  return refs.length ? refs.map(q).join(', ') : 'no ref';
}

/** What to do with a commit check's answer (undefined: not asked yet); `where` names the reference in messages. */
export function commitVerdict(
  c: CommitCheck,
  a: CommitAnswer | undefined,
  where: string,
):
  | { kind: 'check'; check: CommitCheck }
  | { kind: 'pending' }
  | { kind: 'refused'; code: 'REQUEST_SOURCE_NOT_ALLOWED' | 'REQUEST_RESOLUTION_FAILED'; message: string }
  | { kind: 'reachable'; ref: string } {
  if (!a) return { kind: 'check', check: c };
  if (a.state === 'pending') return { kind: 'pending' };
  if (a.state === 'failed') {
    return { kind: 'refused', code: 'REQUEST_RESOLUTION_FAILED', message: `${where}: commit ${q(c.commit)} could not be checked against ${q(c.url)} (${c.rules.join(', ')} allow only commits reachable from ${describeRefs(c.refs)}): ${a.message}; nothing was resolved or run` };
  }
  if (a.state === 'unreachable') {
    const seen = a.refs.length ? `the refs ${a.refs.slice(0, 10).map(q).join(', ')}${a.refs.length > 10 ? ` and ${a.refs.length - 10} more` : ''}` : "no ref (none of the repository's refs matches)";
    return {
      kind: 'refused',
      code: 'REQUEST_SOURCE_NOT_ALLOWED',
      message:
        `${where}: commit ${q(c.commit)} is not reachable from ${describeRefs(c.refs)} of ${q(c.url)}, which ${c.rules.join(', ')} allow${c.rules.length === 1 ? 's' : ''} commits from; it was looked for in ${seen} as the repository shows them now. ` +
        'A commit only on an unmerged branch, in a fork, or force-pushed away has not been reviewed: ask for a commit on an allowed branch or tag, or for the branch itself',
    };
  }
  return { kind: 'reachable', ref: a.ref };
}

/** A resolved resource's tekton.dev/signature, checked against the keys of the rule that allowed it. */
export function checkSignature(obj: Record<string, unknown>, keys: readonly TrustedKey[], rule: string): { key: string } | { refused: string } {
  const md = typeof obj['metadata'] === 'object' && obj['metadata'] !== null ? (obj['metadata'] as Record<string, unknown>) : {};
  const what = `the resolved ${String(obj['kind'])} ${q(typeof md['name'] === 'string' ? md['name'] : '?')}`;
  const names = keys.map((k) => q(k.name)).join(', ');
  const v = verifySignature(obj, keys);
  if (v.state === 'signed') return { key: v.key };
  if (v.state === 'unsigned') return { refused: `${what} is not signed (no tekton.dev/signature annotation), and ${rule} requires a signature by one of the keys ${names}; nothing ran` };
  return { refused: `${what} does not verify against the keys ${names} that ${rule} requires (${v.why}): it was changed after it was signed, or signed with another key; nothing ran` };
}

/**
 * The rule that allowed a reference, and the keys it requires, once its
 * commit check (if any) has answered: for a commit asked for by SHA that
 * several rules allow depending on where it is found, the first rule, in
 * rule order, whose ref globs match `reachableFromRef` (the ref the commit
 * checker found it on); only that rule's keys verify. Without a commit check
 * it is the verdict's own rule and keys. Fails closed: with a commit check but
 * no ref, or a ref no rule names (neither happens when the answer came from
 * the check), `signers` is empty, which no signature verifies against.
 */
export function signersAfterCheck(
  verdict: Extract<SourceVerdict, { allowed: true }>,
  reachableFromRef: string | undefined,
): { rule: string; signers: TrustedKey[] | undefined } {
  const rules = verdict.commitRules;
  if (!verdict.commitCheck || !rules) return { rule: verdict.rule, signers: verdict.signers };
  if (reachableFromRef !== undefined) {
    for (const r of rules) {
      const hit = r.refs.some((p) => {
        const g = compileGlob(p, true);
        return g.ok && matchGlob(g.glob, reachableFromRef);
      });
      if (hit) return { rule: r.name, signers: r.signers };
    }
  }
  return { rule: verdict.rule, signers: [] };
}

/** The sha256 of a resolved file's bytes, as lower-case hex. */
export function contentSha256(content: Uint8Array | string): string {
  return createHash('sha256').update(typeof content === 'string' ? Buffer.from(content, 'utf8') : content).digest('hex');
}

/**
 * Which of the rules that allow a file's URL allow its content: the first,
 * in rule order, whose sha256 list holds the file's digest (when it has a
 * list) and whose keys verify its signature (when it names keys). Refused,
 * naming the digest and each rule's reason, when none does.
 */
export function contentVerdict(
  rules: readonly ContentRule[],
  sha256: string,
  obj: Record<string, unknown>,
  where: string,
): { rule: string; signedBy?: string } | { refused: string; code: 'REQUEST_SOURCE_NOT_ALLOWED' | 'REQUEST_SIGNATURE_INVALID' } {
  const why: string[] = [];
  let byDigest = false;
  for (const r of rules) {
    if (r.sha256 && !r.sha256.includes(sha256)) {
      byDigest = true;
      why.push(`${r.name} lists ${r.sha256.length} reviewed file${r.sha256.length === 1 ? '' : 's'} (${r.sha256.slice(0, 3).map((d) => q(`sha256:${d.slice(0, 12)}…`)).join(', ')}${r.sha256.length > 3 ? ', …' : ''}), not this one`);
      continue;
    }
    if (r.signers) {
      const sig = checkSignature(obj, r.signers, r.name);
      if ('refused' in sig) {
        why.push(sig.refused.replace(/; nothing ran$/, ''));
        continue;
      }
      return { rule: r.name, signedBy: sig.key };
    }
    return { rule: r.name };
  }
  return {
    // Only signatures failed: the file is one the rules take by key, and it does not verify.
    code: byDigest ? 'REQUEST_SOURCE_NOT_ALLOWED' : 'REQUEST_SIGNATURE_INVALID',
    refused:
      `${where}: the file the http resolver fetched has sha256 ${q(sha256)}, which no rule that allows its URL accepts: ${why.join('; ')}. ` +
      'A URL names a file, not what it holds: the administrators of the internal cluster list the sha256 of each reviewed version; nothing ran',
  };
}
