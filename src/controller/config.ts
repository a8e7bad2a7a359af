/** The controller's effective configuration, from the InternalServicesConfig named `config`. */
import type { InternalServicesConfig } from '../api/types.js';
import { MAX_PARAM_VALUE_BYTES, MAX_PARAMS_BYTES } from '../api/types.js';
import { gitRuleFromAllowedURLs, type BundleRule, type GitRule, type HttpRule, type SourcePolicy } from '../policy/source.js';
import { policyProblems } from '../policy/rules.js';
import type { Limits, TimeoutPolicy } from '../policy/limits.js';
import type { Grant, Rule } from '../policy/grant.js';
import type { Capacity } from '../policy/capacity.js';
import { parseDuration } from '../util/duration.js';
import { DEFAULT_REMOTE, qualifyAll } from '../policy/tenant.js';

export interface EffectiveConfig {
  /** Tenants (remote/namespace patterns, bare entries qualified) served with the global settings. */
  allowList: readonly string[];
  /** The remote that bare namespace entries name ('*': every remote; undefined: none). */
  bareRemote: string | undefined;
  /** The bare namespace entries as written (for the hint in a rejection). */
  bareEntries: readonly string[];
  debug: boolean;
  volumeClaim: { name: string; size: string };
  allowedServiceAccounts: ReadonlySet<string>;
  /** Which remote sources may be resolved by allowList namespaces (sources and allowedGitResolverURLs); default deny. */
  sources: SourcePolicy;
  /** How long one resolution may take. */
  resolutionTimeoutMs: number;
  limits: Limits;
  timeouts: TimeoutPolicy;
  capacity: Capacity;
  /** Finished requests are deleted this many seconds after they finished; undefined: never. */
  ttlSecondsAfterFinished: number | undefined;
  /** Tekton Chains signs our PipelineRuns: wait for its signature (at most signedTimeoutMs after completion) and relay it. */
  chains: { enabled: boolean; signedTimeoutMs: number };
  /** How long a finished PipelineRun that Tekton Results follows is kept until Results has stored it. */
  resultsStoreTimeoutMs: number;
  /** Per-namespace rules, in order. */
  rules: Rule[];
  /** What the allowList grants: the global settings. */
  global: Omit<Grant, 'rule'>;
  /** False when there is no InternalServicesConfig "config": new requests wait instead of being decided. */
  present: boolean;
  /** Where the values came from, for messages: "internal-services/config" or "defaults". */
  source: string;
  /**
   * What in the configuration cannot be used, one sentence each (e.g. a
   * sources rule whose glob has no canonical form: it grants nothing).
   * Logged with the configuration; refusals it could have mattered for name it.
   */
  problems: string[];
}

export const DEFAULT_VOLUME_CLAIM = { name: 'workspace', size: '1Gi' } as const;
export const DEFAULT_RESOLUTION_TIMEOUT_MS = 120_000;
export const DEFAULT_MAX_PARAMS_BYTES = 524288;
export const DEFAULT_MAX_TIMEOUT = '24h';
export const DEFAULT_APPROVAL_TIMEOUT_MS = 24 * 3_600_000;
export const DEFAULT_CHAINS_SIGNED_TIMEOUT_MS = 300_000;

type Obj = Record<string, unknown>;
const obj = (v: unknown): Obj => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : {});
const strings = (v: unknown): string[] => (Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : []);
const list = (v: unknown): Obj[] => (Array.isArray(v) ? v.map(obj) : []);
const positive = (v: unknown): number | undefined => (typeof v === 'number' && Number.isInteger(v) && v >= 1 ? v : undefined);
const int = (v: unknown, dflt: number, max: number) => (typeof v === 'number' && Number.isInteger(v) && v >= 0 ? Math.min(v, max) : dflt);

/**
 * A source policy as written. Every rule keeps its place (and its name,
 * sources.git[i] as written): one that cannot be used (no URLs, a glob with no
 * canonical form) grants nothing and is reported by policyProblems, never
 * dropped or widened.
 */
function sourcePolicyOf(src: Obj, allowedURLs: string[], source: string, bare: string | undefined): SourcePolicy {
  const git: GitRule[] = list(src['git'])
    .map((r, i) => ({
      name: `sources.git[${i}]`,
      urls: strings(r['urls']),
      revisions: strings(r['revisions']),
      ...(r['commits'] !== undefined ? { commits: r['commits'] } : {}),
      ...(r['signatures'] !== undefined ? { signatures: r['signatures'] } : {}),
      ...(r['paths'] !== undefined ? { paths: strings(r['paths']) } : {}),
      ...(r['dotGit'] !== undefined ? { dotGit: r['dotGit'] } : {}),
      ...(r['namespaces'] !== undefined ? { namespaces: qualifyAll(strings(r['namespaces']), bare) } : {}),
    }));
  if (allowedURLs.length) git.push(gitRuleFromAllowedURLs(allowedURLs));
  const bundles: BundleRule[] = list(src['bundles'])
    .map((r, i) => ({
      name: `sources.bundles[${i}]`,
      repositories: strings(r['repositories']),
      digestOnly: r['digestOnly'] === true,
      ...(r['namespaces'] !== undefined ? { namespaces: qualifyAll(strings(r['namespaces']), bare) } : {}),
      ...(r['signatures'] !== undefined ? { signatures: r['signatures'] } : {}),
    }));
  const http: HttpRule[] = list(src['http']).map((r, i) => ({
    name: `sources.http[${i}]`,
    urls: strings(r['urls']),
    ...(r['sha256'] !== undefined ? { sha256: r['sha256'] as string[] } : {}),
    ...(r['namespaces'] !== undefined ? { namespaces: qualifyAll(strings(r['namespaces']), bare) } : {}),
    ...(r['signatures'] !== undefined ? { signatures: r['signatures'] } : {}),
  }));
  return { git, bundles, ...(http.length ? { http } : {}), cluster: src['cluster'] === true, source };
}

function timeoutPolicyOf(t: Obj, base?: TimeoutPolicy): TimeoutPolicy {
  const d = obj(t['defaults']);
  const defaults: Record<string, string> = {};
  for (const k of ['pipeline', 'tasks', 'finally']) if (typeof d[k] === 'string' && parseDuration(d[k] as string) !== undefined) defaults[k] = d[k] as string;
  const maxText = typeof t['maximum'] === 'string' ? t['maximum'] : undefined;
  const maximum = maxText !== undefined ? parseDuration(maxText) : base ? base.maximumMs : parseDuration(DEFAULT_MAX_TIMEOUT);
  return {
    defaults: t['defaults'] !== undefined || !base ? defaults : base.defaults,
    maximumMs: maximum === undefined || maximum === 0 ? undefined : maximum,
    allowNoTimeout: typeof t['allowNoTimeout'] === 'boolean' ? t['allowNoTimeout'] : (base?.allowNoTimeout ?? false),
  };
}

function chainsOf(c: Obj): EffectiveConfig['chains'] {
  const t = typeof c['signedTimeout'] === 'string' ? parseDuration(c['signedTimeout']) : undefined;
  return { enabled: c['enabled'] === true, signedTimeoutMs: t !== undefined && t > 0 ? t : DEFAULT_CHAINS_SIGNED_TIMEOUT_MS };
}

/**
 * Defaults apply when there is no config (deny everything). The API server
 * validates and defaults the object; this only guards against objects stored
 * before the schema had a field.
 */
const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})$/;

/**
 * rules[i].expires: absent, the rule does not expire; a time that cannot be
 * read is reported and makes the rule grant nothing (never a rule that
 * grants for ever by mistake).
 */
function expiryOf(v: unknown, i: number, name: string | undefined, problems: string[]): Pick<Rule, 'expiry'> {
  if (v === undefined || v === null) return {};
  const written = typeof v === 'string' ? v : JSON.stringify(v);
  const atMs = typeof v === 'string' && RFC3339.test(v) ? Date.parse(v) : NaN;
  if (Number.isFinite(atMs)) return { expiry: { atMs, expires: written } };
  problems.push(`rules[${i}]${name ? ` (${JSON.stringify(name)})` : ''}: expires ${JSON.stringify(written)} is not an RFC 3339 time (e.g. 2027-01-31T00:00:00Z); the rule grants nothing until it is fixed`);
  return { expiry: { atMs: 0, expires: `${written} (not a time)` } };
}

export function effectiveConfig(
  cfg: InternalServicesConfig | undefined,
  namespace: string,
  /** defaultRemote: the controller's own default remote (its --remote-kubeconfig one); absent: none. */
  opts: { defaultRemote?: string | undefined } = { defaultRemote: DEFAULT_REMOTE },
): EffectiveConfig {
  const defaultRemote = opts.defaultRemote;
  const spec = obj(cfg?.spec);
  // The remote whose namespaces bare entries name ('*': every remote; undefined: none).
  const bare = typeof spec['defaultRemote'] === 'string' && spec['defaultRemote'] ? spec['defaultRemote'] : defaultRemote;
  const bareEntries = [...strings(spec['allowList']), ...list(spec['rules']).flatMap((r) => strings(r['namespaces']))].filter((e) => !e.includes('/'));
  const source = cfg ? `InternalServicesConfig ${namespace}/${cfg.metadata.name}` : `defaults (no InternalServicesConfig "config" in namespace ${namespace})`;
  const src = obj(spec['sources']);
  const sources = sourcePolicyOf(src, strings(spec['allowedGitResolverURLs']), source, bare);
  const timeout = typeof src['resolutionTimeout'] === 'string' ? parseDuration(src['resolutionTimeout']) : undefined;
  const limits = obj(spec['limits']);
  const vc = obj(spec['volumeClaim']);
  const global: Omit<Grant, 'rule'> = {
    serviceAccounts: new Set(strings(spec['allowedServiceAccounts'])),
    limits: {
      maxParamValueBytes: int(limits['maxParamValueBytes'], MAX_PARAM_VALUE_BYTES, MAX_PARAM_VALUE_BYTES),
      maxParamsBytes: int(limits['maxParamsBytes'], DEFAULT_MAX_PARAMS_BYTES, MAX_PARAMS_BYTES),
    },
    timeouts: timeoutPolicyOf(obj(spec['timeouts'])),
    sources,
    params: { patterns: [] },
    onRevoke: 'finish',
    approval: { required: false, timeoutMs: DEFAULT_APPROVAL_TIMEOUT_MS, rule: '' },
  };
  const expiryProblems: string[] = [];
  const rules: Rule[] = list(spec['rules'])
    .filter((r) => strings(r['namespaces']).length > 0)
    .map((r, i) => {
      const p = obj(r['params']);
      const name = typeof r['name'] === 'string' && r['name'] ? r['name'] : undefined;
      return {
        label: name ? `rules[${i}] (${JSON.stringify(name)})` : `rules[${i}]`,
        namespaces: qualifyAll(strings(r['namespaces']), bare),
        pipelines: strings(r['pipelines']),
        serviceAccounts: new Set(strings(r['serviceAccounts'])),
        limits: { maxParamValueBytes: int(p['maxValueBytes'], global.limits.maxParamValueBytes, MAX_PARAM_VALUE_BYTES), maxParamsBytes: global.limits.maxParamsBytes },
        timeouts: timeoutPolicyOf(obj(r['timeouts']), global.timeouts),
        sources: sourcePolicyOf(obj(r['sources']), [], `${name ? `rules[${i}] (${JSON.stringify(name)})` : `rules[${i}]`} of ${source}`, bare),
        params: {
          ...(p['allowed'] !== undefined ? { allowed: strings(p['allowed']) } : {}),
          patterns: list(p['patterns']).filter((x) => typeof x['name'] === 'string' && typeof x['pattern'] === 'string').map((x) => ({ name: x['name'] as string, pattern: x['pattern'] as string })),
        },
        onRevoke: r['onRevoke'] === 'cancel' ? 'cancel' : 'finish',
        ...expiryOf(r['expires'], i, name, expiryProblems),
        approval: {
          required: r['requireApproval'] === true,
          timeoutMs: (typeof r['approvalTimeout'] === 'string' ? parseDuration(r['approvalTimeout']) : undefined) || DEFAULT_APPROVAL_TIMEOUT_MS,
          rule: name ?? `rules-${i}`,
        },
      };
    });
  const problems = [...policyProblems(sources), ...rules.flatMap((r) => policyProblems(r.sources)), ...expiryProblems];
  return {
    allowList: qualifyAll(strings(spec['allowList']), bare),
    bareRemote: bare,
    bareEntries,
    debug: spec['debug'] === true,
    volumeClaim: {
      name: typeof vc['name'] === 'string' && vc['name'] ? vc['name'] : DEFAULT_VOLUME_CLAIM.name,
      size: typeof vc['size'] === 'string' && vc['size'] ? vc['size'] : DEFAULT_VOLUME_CLAIM.size,
    },
    allowedServiceAccounts: global.serviceAccounts,
    sources,
    resolutionTimeoutMs: timeout && timeout > 0 ? timeout : DEFAULT_RESOLUTION_TIMEOUT_MS,
    limits: global.limits,
    timeouts: global.timeouts,
    ttlSecondsAfterFinished: positive(spec['ttlSecondsAfterFinished']),
    chains: chainsOf(obj(spec['chains'])),
    resultsStoreTimeoutMs: (typeof spec['resultsStoreTimeout'] === 'string' ? parseDuration(spec['resultsStoreTimeout']) : undefined) ?? 300_000,
    capacity: {
      maxRunning: positive(obj(spec['capacity'])['maxRunning']),
      maxRunningPerNamespace: positive(obj(spec['capacity'])['maxRunningPerNamespace']),
    },
    rules,
    global,
    present: cfg !== undefined,
    source,
    problems,
  };
}
