/**
 * A ref means exactly that ref. Tekton's git resolver fetches a revision
 * with `git fetch origin -- <revision>`; where `refs/heads/<name>` does not
 * exist, git also takes a tag literally named `refs/heads/<name>`
 * (`refs/tags/refs/heads/<name>`), and `refs/tags/<name>` a branch named
 * `refs/tags/<name>`: git's guessing, after the rule was matched on the name.
 * So the controller looks up the exact ref in the repository itself
 * (src/git/commit-checker.ts, `lookUpRef`: the ref's name compared as a whole
 * string, never through git's rules) and hands the resolver the commit; a
 * name the rule allows that is not that exact ref is refused, saying so.
 *
 * Pure: the answer comes in as a value.
 */

/** An exact ref (refs/heads/<name> or refs/tags/<name>) of a repository (canonical URL). */
export interface RefLookup {
  url: string;
  ref: string;
}

export type RefAnswer =
  | { state: 'pending' }
  /** commit: the commit the ref points at (a tag peeled to its commit). */
  | { state: 'found'; commit: string }
  /** similar: refs of the repository whose names end like the one asked for (refs/tags/refs/heads/x for refs/heads/x). */
  | { state: 'absent'; similar: string[] }
  | { state: 'failed'; message: string };

export function refLookupKey(l: RefLookup): string {
  return `ref\n${l.url}\n${l.ref}`;
}

const q = (s: string) => JSON.stringify(s);

/** What to do with a lookup's answer (undefined: not asked yet); `where` names the reference in messages. */
export function refVerdict(
  l: RefLookup,
  a: RefAnswer | undefined,
  where: string,
): { kind: 'lookup'; lookup: RefLookup } | { kind: 'pending' } | { kind: 'refused'; code: 'REQUEST_SOURCE_NOT_ALLOWED' | 'REQUEST_RESOLUTION_FAILED'; message: string } | { kind: 'found'; commit: string } {
  if (!a) return { kind: 'lookup', lookup: l };
  if (a.state === 'pending') return { kind: 'pending' };
  if (a.state === 'failed') return { kind: 'refused', code: 'REQUEST_RESOLUTION_FAILED', message: `${where}: ${q(l.ref)} could not be looked up in ${q(l.url)}: ${a.message}; nothing was resolved or run` };
  if (a.state === 'absent') {
    const branch = l.ref.startsWith('refs/heads/');
    const name = l.ref.slice(branch ? 'refs/heads/'.length : 'refs/tags/'.length);
    const like = a.similar.length
      ? ` The repository has ${a.similar.slice(0, 5).map(q).join(', ')}${a.similar.length > 5 ? ` and ${a.similar.length - 5} more` : ''}, named like it: only the exact ref counts, never a ${branch ? 'tag' : 'branch'} or ref whose name merely ends like it.`
      : '';
    const hint = branch ? ` (a bare revision means a branch; for a tag write ${q(`refs/tags/${name}`)})` : ` (for a branch write ${q(`refs/heads/${name}`)})`;
    return {
      kind: 'refused',
      code: 'REQUEST_SOURCE_NOT_ALLOWED',
      message: `${where}: ${q(l.url)} has no ${branch ? 'branch' : 'tag'} ${q(l.ref)}${hint}; the controller looks up exactly the ref the rule allows and runs its commit.${like} Nothing was resolved or run`,
    };
  }
  return { kind: 'found', commit: a.commit };
}
