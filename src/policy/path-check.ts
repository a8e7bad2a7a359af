/**
 * A `paths` rule holds for the file that is read. Tekton's git resolver
 * checks the repository out and reads `pathInRepo` with the file system,
 * which follows symbolic links: a link committed under an allowed path
 * (`tasks/x.yaml -> ../secret/other.yaml`, or a directory `tasks -> secret`)
 * makes it read a file the rule does not allow, and report the link's path.
 * A submodule (a gitlink) stands for another repository altogether. So, at
 * the commit to be resolved, every component of pathInRepo must be a
 * directory of the repository (a tree) and the last one a regular file (a
 * blob, mode 100644 or 100755); a symbolic link or a submodule at any depth,
 * or a path that is not there, is refused before anything is resolved. The
 * repository itself is asked (src/git/path-checks.ts: `git ls-tree`, which
 * never follows a link); this decides what its answer means.
 *
 * Pure: the answer comes in as a value.
 */

/** A file of a repository (canonical URL) at a commit (full SHA), as the git resolver would read it. */
export interface PathCheck {
  url: string;
  commit: string;
  path: string;
}

export type PathKind = 'symlink' | 'submodule' | 'missing' | 'not-a-file';

export type PathAnswer =
  | { state: 'pending' }
  /** Every component is a directory, the last a regular file. */
  | { state: 'ok' }
  /** component: the leading part of the path that is not what it must be (the whole path for the last one). */
  | { state: 'refused'; component: string; kind: PathKind; detail?: string }
  | { state: 'failed'; message: string };

export function pathCheckKey(c: PathCheck): string {
  return `path\n${c.url}\n${c.commit}\n${c.path}`;
}

const q = (s: string) => JSON.stringify(s);

function whatItIs(a: Extract<PathAnswer, { state: 'refused' }>): string {
  const at = q(a.component);
  switch (a.kind) {
    case 'symlink':
      return `${at} is a symbolic link (git mode 120000); the git resolver would follow it and read whatever file it points to, under a path the rule was never matched against`;
    case 'submodule':
      return `${at} is a submodule (git mode 160000, another repository); what the resolver would read there is not a file of this repository at this commit`;
    case 'missing':
      return `the repository has no ${at} there${a.detail ? ` (${a.detail})` : ''}`;
    case 'not-a-file':
      return `${at} is not a regular file${a.detail ? ` (${a.detail})` : ''}`;
  }
}

/**
 * What to do with a check's answer (undefined: not asked yet); `where` names
 * the reference in messages.
 */
export function pathVerdict(
  c: PathCheck,
  a: PathAnswer | undefined,
  where: string,
): { kind: 'check'; check: PathCheck } | { kind: 'pending' } | { kind: 'refused'; code: 'REQUEST_SOURCE_NOT_ALLOWED' | 'REQUEST_RESOLUTION_FAILED'; message: string } | { kind: 'ok' } {
  if (!a) return { kind: 'check', check: c };
  if (a.state === 'pending') return { kind: 'pending' };
  if (a.state === 'ok') return { kind: 'ok' };
  const at = `${q(c.path)} at commit ${c.commit} of ${q(c.url)}`;
  if (a.state === 'failed') {
    return { kind: 'refused', code: 'REQUEST_RESOLUTION_FAILED', message: `${where}: ${at} could not be checked in the repository: ${a.message}; nothing was resolved or run` };
  }
  const why = whatItIs(a);
  const rest =
    a.kind === 'missing'
      ? 'the file must be at that path at that commit'
      : a.kind === 'not-a-file'
        ? 'pathInRepo must name a regular file'
        : `a source rule's paths would hold for the name, not for the file read, so symbolic links and submodules are refused at any depth of pathInRepo; refer to the file itself, by its own path`;
  return { kind: 'refused', code: 'REQUEST_SOURCE_NOT_ALLOWED', message: `${where}: ${at}: ${why}; ${rest}. Nothing was resolved or run` };
}
