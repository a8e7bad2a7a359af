/**
 * The published security advisories of Tekton Pipelines in the parts this
 * controller relies on (the git and http resolvers, which answer the
 * ResolutionRequests the controller makes to check a request's references
 * and the references of the PipelineRuns it creates; every resolver runs in
 * one pod, so a hole that crashes one stops them all), and which Tekton
 * versions they apply to. Pure: a table and a version comparison.
 *
 * How the table was established (see docs/deploying.md, "Supported Tekton
 * versions"): the advisories' affected ranges, checked against the source of
 * each release of github.com/tektoncd/pipeline the Go module proxy serves
 * (pkg/resolution/resolver/git: the `..`/symlink check of pathInRepo, the
 * "must not begin with '-'" check of revision, and "the system token cannot
 * be sent to a non-default server URL"; pkg/resolution/resolver/http: the
 * limit on the body it reads). Where neither the advisory nor a
 * release's source says whether a line has the fix, the table says
 * `unknown` and such a version counts as affected: a version is never
 * called safe on a guess.
 *
 * A version that cannot be read as a release (`devel`, what a build from
 * source says; garbage; nothing) has its own answer, UNKNOWN_VERSION: none
 * of the advisories can be ruled out.
 */

/** Whether, and from which release, a minor line (e.g. "1.6") has an advisory's fix. */
export type LineFix =
  /** Fixed from this release of the line on (earlier releases of the line are affected). */
  | { readonly state: 'fixed'; readonly in: string }
  /** The line got no fix: every release of it from the first affected one is affected. */
  | { readonly state: 'none' }
  /** Not established: `lacking` (and every earlier release of the line) has no fix; later ones were not checked, so they count as affected. */
  | { readonly state: 'unknown'; readonly lacking: string };

export interface Advisory {
  /** 'unknown-version' only for UNKNOWN_VERSION. */
  readonly kind: 'advisory' | 'unknown-version';
  /** GitHub's advisory id (GHSA-…); also the metric label. */
  readonly id: string;
  readonly cve: string;
  readonly severity: 'critical' | 'high' | 'unknown';
  /** One line: what the hole is. */
  readonly summary: string;
  /** The component of Tekton Pipelines it is in. */
  readonly component: string;
  /** How this controller relies on that component, and whether its requests can reach the hole. */
  readonly reliance: string;
  /** The first affected release; undefined: every release before the fix (the hole is older than the 1.x lines). */
  readonly firstAffected: string | undefined;
  /** Every release from this one on has the fix (the line it first shipped in, and all later lines). */
  readonly fixedFrom: string;
  /** Minor lines ("1.6") before fixedFrom that got a backport, or whose fix is not established. A line not named here got none. */
  readonly lines: Readonly<Record<string, LineFix>>;
  /** How the table row was established. */
  readonly evidence: string;
  readonly url: string;
}

/** The Tekton Pipelines release the test harness runs (hack/envtest/versions.env; a unit test keeps the two equal). */
export const TESTED_VERSION = 'v1.6.6';
/** The first release of the tested line with every fix of the table: the supported range starts here. */
export const SUPPORTED_FROM = 'v1.6.2';

const GIT = 'git resolver';
const HTTP = 'http resolver';

export const ADVISORIES: readonly Advisory[] = [
  {
    kind: 'advisory',
    id: 'GHSA-j5q5-j9gm-2w5c',
    cve: 'CVE-2026-33211',
    severity: 'critical',
    summary: 'path traversal through pathInRepo: a tenant reads any file of the resolver pod, its ServiceAccount token (cluster-wide read of Secrets) included',
    component: GIT,
    reliance:
      'every git reference of a request is resolved by it (the controller\'s own ResolutionRequests and the PipelineRuns it creates); the controller refuses a pathInRepo with a ".." segment itself, but not a symbolic link committed to an allowed repository',
    firstAffected: 'v1.0.0',
    fixedFrom: 'v1.11.0',
    lines: {
      '1.0': { state: 'fixed', in: 'v1.0.1' },
      '1.3': { state: 'fixed', in: 'v1.3.3' },
      '1.6': { state: 'fixed', in: 'v1.6.1' },
      '1.9': { state: 'fixed', in: 'v1.9.2' },
      '1.10': { state: 'fixed', in: 'v1.10.2' },
    },
    evidence:
      'the advisory\'s ranges (>=1.0.0 <1.0.1, >=1.1.0 <1.3.3, >=1.4.0 <1.6.1, >=1.7.0 <1.9.2, >=1.10.0 <1.10.2; 0.x used go-git\'s in-memory filesystem and is not affected); source: v1.6.0 lacks the check, v1.0.1, v1.3.4, v1.6.1, v1.6.2, v1.6.6, v1.9.2, v1.10.2, v1.11.0, v1.11.1 and v1.12.0 have it',
    url: 'https://github.com/tektoncd/pipeline/security/advisories/GHSA-j5q5-j9gm-2w5c',
  },
  {
    kind: 'advisory',
    id: 'GHSA-94jr-7pqp-xhcq',
    cve: 'CVE-2026-40938',
    severity: 'high',
    summary: 'option injection through revision (a value beginning with "-", e.g. --upload-pack=…): code execution in the resolver pod',
    component: GIT,
    reliance: 'every git reference of a request is resolved by it; the controller refuses a revision beginning with "-" itself, but the resolver is shared by every tenant of the internal cluster',
    firstAffected: 'v1.0.0',
    fixedFrom: 'v1.12.0',
    lines: {
      '1.0': { state: 'fixed', in: 'v1.0.2' },
      '1.3': { state: 'fixed', in: 'v1.3.4' },
      '1.6': { state: 'fixed', in: 'v1.6.2' },
      '1.9': { state: 'fixed', in: 'v1.9.3' },
      '1.10': { state: 'none' },
      '1.11': { state: 'fixed', in: 'v1.11.1' },
    },
    evidence:
      'the advisory\'s ranges (>=1.0.0 <1.0.2, >=1.2.0 <1.3.4, >=1.4.0 <1.6.2, >=1.7.0 <1.9.3, >=1.10.0 <1.11.1: no fix on the 1.10 line; 1.1.x, which the ranges skip, counts as affected); source: v1.6.1, v1.9.2, v1.10.2 and v1.11.0 lack the check, v1.3.4, v1.6.2, v1.6.6, v1.11.1 and v1.12.0 have it',
    url: 'https://github.com/tektoncd/pipeline/security/advisories/GHSA-94jr-7pqp-xhcq',
  },
  {
    kind: 'advisory',
    id: 'GHSA-wjxp-xrpv-xpff',
    cve: 'CVE-2026-40161',
    severity: 'high',
    summary: 'the git resolver\'s configured API token is sent to a requester-chosen serverURL (API mode without a token parameter)',
    component: `${GIT} (API mode)`,
    reliance: 'the controller passes only url, revision and pathInRepo (anonymous clone), so its requests cannot reach this hole; other users of the internal cluster\'s resolver can',
    firstAffected: undefined,
    fixedFrom: 'v1.12.0',
    lines: {
      '1.0': { state: 'unknown', lacking: 'v1.0.1' },
      '1.3': { state: 'fixed', in: 'v1.3.4' },
      '1.6': { state: 'fixed', in: 'v1.6.2' },
      '1.9': { state: 'unknown', lacking: 'v1.9.2' },
      '1.10': { state: 'unknown', lacking: 'v1.10.2' },
      '1.11': { state: 'fixed', in: 'v1.11.1' },
    },
    evidence:
      'source only (the advisory\'s ranges were not at hand): v0.70.0, v1.0.1, v1.6.0, v1.6.1, v1.9.2, v1.10.2 and v1.11.0 send the token, v1.3.4, v1.6.2, v1.6.6, v1.11.1 and v1.12.0 refuse; v1.0.2, v1.3.3, v1.6.3–v1.6.5 and v1.9.3 could not be fetched (v1.6.3–v1.6.5 lie between two fixed releases of the line); 0.x lines got no fix',
    url: 'https://github.com/tektoncd/pipeline/security/advisories/GHSA-wjxp-xrpv-xpff',
  },
  {
    kind: 'advisory',
    id: 'GHSA-m2cx-gpqf-qf74',
    cve: 'CVE-2026-40924',
    severity: 'unknown',
    summary: 'the http resolver reads a response body of any size (io.ReadAll without a limit): a server, or a redirect from an allowed URL, that sends a large body gets the resolvers pod OOM-killed, and with it every resolver of the cluster',
    component: HTTP,
    reliance:
      'every http reference a sources.http rule allows is fetched by it; the controller binds the content by its digest, which does not limit what the resolver reads before the digest is checked, and the pod it crashes also resolves every git and bundles reference',
    firstAffected: undefined,
    fixedFrom: 'v1.12.0',
    lines: {
      '1.0': { state: 'unknown', lacking: 'v1.0.1' },
      '1.3': { state: 'fixed', in: 'v1.3.4' },
      '1.6': { state: 'fixed', in: 'v1.6.2' },
      '1.9': { state: 'unknown', lacking: 'v1.9.2' },
      '1.10': { state: 'unknown', lacking: 'v1.10.2' },
      '1.11': { state: 'fixed', in: 'v1.11.1' },
    },
    evidence:
      'source only (the advisory\'s ranges and severity were not at hand; Go\'s vulnerability database names v1.11.1 as a fixed release): v0.70.0, v1.0.0, v1.0.1, v1.6.0, v1.6.1, v1.9.2, v1.10.0, v1.10.2 and v1.11.0 read the body with io.ReadAll and no limit, v1.3.4, v1.6.2, v1.6.6, v1.11.1 and v1.12.0 stop at 1 MiB; v1.0.2, v1.3.3 and v1.9.3 are not served by the module proxy',
    url: 'https://github.com/tektoncd/pipeline/security/advisories/GHSA-m2cx-gpqf-qf74',
  },
];

/** The answer for a version that cannot be read as a release: none of the advisories can be ruled out. */
export const UNKNOWN_VERSION: Advisory = {
  kind: 'unknown-version',
  id: 'unknown-version',
  cve: '',
  severity: 'unknown',
  summary: `the Tekton Pipelines version is not a release version (like ${TESTED_VERSION}), so none of the advisories of the git and http resolvers (${ADVISORIES.map((a) => a.id).join(', ')}) can be ruled out`,
  component: 'Tekton Pipelines',
  reliance: 'every resolver reference of a request',
  firstAffected: undefined,
  fixedFrom: SUPPORTED_FROM,
  lines: {},
  evidence: 'no version to compare',
  url: '',
};

/** A release version: major.minor.patch, with its pre-release part (which sorts before the release). */
export interface TektonRelease {
  readonly major: number;
  readonly minor: number;
  readonly patch: number;
  readonly prerelease?: string;
}

const RELEASE = /^v?(0|[1-9]\d{0,5})\.(0|[1-9]\d{0,5})\.(0|[1-9]\d{0,5})(?:-([0-9A-Za-z.-]{1,64}))?(?:\+[0-9A-Za-z.-]{1,64})?$/;

/** "v1.6.6", "1.6.6", "v1.7.0-rc.1", "v1.6.6+build": a release; anything else ("devel", "v1.6", garbage): undefined. */
export function parseTektonVersion(version: string): TektonRelease | undefined {
  const m = RELEASE.exec(version.trim());
  if (!m) return undefined;
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3]), ...(m[4] ? { prerelease: m[4] } : {}) };
}

/** The version as written back: v1.6.6, v1.7.0-rc.1. */
export function formatTektonVersion(v: TektonRelease): string {
  return `v${v.major}.${v.minor}.${v.patch}${v.prerelease ? `-${v.prerelease}` : ''}`;
}

/** Negative when a < b. A pre-release is below its release (two pre-releases of one release compare as text). */
export function compareTektonVersions(a: TektonRelease, b: TektonRelease): number {
  const d = a.major - b.major || a.minor - b.minor || a.patch - b.patch;
  if (d) return d;
  if (a.prerelease === b.prerelease) return 0;
  if (a.prerelease === undefined) return 1;
  if (b.prerelease === undefined) return -1;
  return a.prerelease < b.prerelease ? -1 : 1;
}

function release(v: string): TektonRelease {
  const r = parseTektonVersion(v);
  if (!r) throw new Error(`not a release version in the advisory table: ${v}`);
  return r;
}

/** "1.6" of v1.6.6. */
export function lineOf(v: TektonRelease): string {
  return `${v.major}.${v.minor}`;
}

/** What an advisory's table says of a version's line (a line it does not name got no fix). */
export function lineFix(a: Advisory, v: TektonRelease): LineFix {
  return a.lines[lineOf(v)] ?? { state: 'none' };
}

/** Whether a release is affected by an advisory of the table. */
function affects(a: Advisory, v: TektonRelease): boolean {
  if (a.firstAffected !== undefined && compareTektonVersions(v, release(a.firstAffected)) < 0) return false;
  if (compareTektonVersions(v, release(a.fixedFrom)) >= 0) return false;
  const fix = lineFix(a, v);
  return fix.state === 'fixed' ? compareTektonVersions(v, release(fix.in)) < 0 : true;
}

/**
 * The advisories that apply to a Tekton Pipelines version (data.version of
 * its pipelines-info ConfigMap), in table order: none for a release with
 * every fix, [UNKNOWN_VERSION] for what is not a release version.
 */
export function advisoriesFor(version: string): Advisory[] {
  const v = parseTektonVersion(version);
  if (!v) return [UNKNOWN_VERSION];
  return ADVISORIES.filter((a) => affects(a, v));
}

/** Every release the table names as the start of a fix, sorted. */
function fixReleases(): TektonRelease[] {
  const all = new Map<string, TektonRelease>();
  for (const a of ADVISORIES) {
    for (const v of [a.fixedFrom, ...Object.values(a.lines).flatMap((f) => (f.state === 'fixed' ? [f.in] : []))]) all.set(v, release(v));
  }
  return [...all.values()].sort(compareTektonVersions);
}

/** The first release of a line after the tested one whose every release from its first on has every fix (fixedFrom of the table: v1.12.0). */
function firstCleanLine(): TektonRelease {
  return ADVISORIES.map((a) => release(a.fixedFrom)).sort(compareTektonVersions).at(-1)!;
}

/**
 * What the administrators should do about a version, in one sentence:
 * undefined when no advisory applies. The upgrade named is the first
 * release of the same line with every fix known here, else the first
 * later release with every fix (never below SUPPORTED_FROM).
 */
export function upgradeAdvice(version: string): string | undefined {
  const open = advisoriesFor(version);
  if (!open.length) return undefined;
  const v = parseTektonVersion(version);
  if (!v) {
    return `run a release of Tekton Pipelines with every fix (${SUPPORTED_FROM} or later of the ${lineOf(release(SUPPORTED_FROM))} line, or ${formatTektonVersion(firstCleanLine())} or later) whose pipelines-info ConfigMap says its version (data.version)`;
  }
  const clean = fixReleases().filter((c) => compareTektonVersions(c, v) > 0 && advisoriesFor(formatTektonVersion(c)).length === 0);
  const sameLine = clean.find((c) => lineOf(c) === lineOf(v));
  const floor = release(SUPPORTED_FROM);
  const later = clean.find((c) => compareTektonVersions(c, floor) >= 0);
  // One clause per release the unknowns lack: "… fixes A or B is not known here".
  const lacking = new Map<string, string[]>();
  for (const a of open) {
    const f = lineFix(a, v);
    if (f.state === 'unknown') lacking.set(f.lacking, [...(lacking.get(f.lacking) ?? []), a.id]);
  }
  const unknown = [...lacking].map(([release, ids]) => `whether a ${lineOf(v)} release after ${release} fixes ${ids.join(' or ')} is not known here`);
  const note = unknown.length ? ` (${unknown.join('; ')})` : '';
  if (sameLine) return `upgrade Tekton Pipelines to ${formatTektonVersion(sameLine)} or later of the ${lineOf(v)} line${note}`;
  if (later) return `upgrade Tekton Pipelines to ${formatTektonVersion(later)} or later: the ${lineOf(v)} line has no release with every fix known here${note}`;
  return `upgrade Tekton Pipelines to a release with every fix${note}`;
}

/** "GHSA-… (CVE-…, critical: summary)" for messages. */
export function describeAdvisory(a: Advisory): string {
  return a.kind === 'unknown-version' ? a.summary : `${a.id} (${a.cve}${a.severity === 'unknown' ? '' : `, ${a.severity}`}: ${a.summary})`;
}
