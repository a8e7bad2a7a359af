/**
 * Which kind of request a command works on (--kind): the built-in
 * InternalRequest, or a typed kind that a RequestDefinition made (a
 * SigningRequest), named as kubectl names resources: PLURAL.GROUP,
 * PLURAL.VERSION.GROUP, or a bare Kind, plural, singular or short name.
 *
 * Pure: parsing the flag, and choosing among the resources that API discovery
 * (discovery.ts) or the RequestDefinitions (approve-deny.ts) found. The names of
 * InternalRequest itself never need a look-up, so the default costs nothing.
 */
import { API_VERSION_PATTERN } from '../../api/request-definition.js';
import { GROUP, VERSION } from '../../api/types.js';
import { CliError } from './args-output.js';

/** A request kind as the commands use it: where its objects are, and its names for messages. */
export interface KindRef {
  kind: string;
  group: string;
  version: string;
  plural: string;
  singular: string;
  /** InternalRequest: made from a Pipeline and params. Any other kind: from its spec fields. */
  builtIn: boolean;
}

export const BUILT_IN_KIND: KindRef = Object.freeze({ kind: 'InternalRequest', group: GROUP, version: VERSION, plural: 'internalrequests', singular: 'internalrequest', builtIn: true });

/** What --kind asks for: a name (Kind, plural, singular or short name), with the group and version when given. */
export interface KindQuery {
  name: string;
  group?: string;
  version?: string;
}

/** The forms --kind takes, for messages and help. */
export const KIND_FORMS = 'PLURAL.GROUP (e.g. signingrequests.signing.example.com), PLURAL.VERSION.GROUP, or a Kind, plural or short name';

const NAME = /^[A-Za-z][A-Za-z0-9-]{0,62}$/;
const API_GROUP = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const API_VERSION = new RegExp(API_VERSION_PATTERN);
const BUILT_IN_NAMES = ['internalrequest', 'internalrequests', 'ir'];

/**
 * The --kind flag; undefined when it is not given (or empty, as a Tekton Task
 * passes an optional param). The segment after the first dot is a version
 * when it looks like one (v1, v1alpha1) and a group follows it.
 */
export function parseKindFlag(text: string | undefined): KindQuery | undefined {
  const t = text?.trim() ?? '';
  if (t === '') return undefined;
  const [name = '', ...rest] = t.split('.');
  const version = rest.length >= 2 && API_VERSION.test(rest[0]!) ? rest.shift() : undefined;
  const group = rest.length ? rest.join('.').toLowerCase() : undefined;
  if (!NAME.test(name) || (group !== undefined && (group.length > 253 || !API_GROUP.test(group)))) {
    throw new CliError('CLI_USAGE', `--kind "${t}" is not a resource name: give ${KIND_FORMS}`);
  }
  return { name, ...(group ? { group } : {}), ...(version ? { version } : {}) };
}

/** True when the query names InternalRequest (or nothing): no look-up needed. */
export function namesBuiltIn(q: KindQuery | undefined): boolean {
  if (!q) return true;
  return BUILT_IN_NAMES.includes(q.name.toLowerCase()) && (q.group === undefined || q.group === GROUP) && (q.version === undefined || q.version === VERSION);
}

/** True when --kind (as given) is a typed kind, i.e. anything but InternalRequest; throws on a malformed flag. */
export function isTypedKindFlag(text: string | undefined): boolean {
  return !namesBuiltIn(parseKindFlag(text));
}

/** A resource a cluster serves (or a RequestDefinition defines), as far as choosing a kind needs. */
export interface ServedResource {
  group: string;
  version: string;
  kind: string;
  plural: string;
  singular: string;
  shortNames: readonly string[];
  namespaced: boolean;
  /** It has a status subresource, as every request kind does. */
  status: boolean;
}

/** One group version's discovery document as ServedResources: a subresource only marks its resource as having a status. */
export function servedResources(
  group: string,
  version: string,
  resources: ReadonlyArray<{ name: string; kind: string; singularName?: string; shortNames?: string[]; namespaced: boolean }>,
): ServedResource[] {
  const withStatus = new Set(resources.filter((r) => r.name.endsWith('/status')).map((r) => r.name.slice(0, -'/status'.length)));
  return resources
    .filter((r) => !r.name.includes('/'))
    .map((r) => ({
      group,
      version,
      kind: r.kind,
      plural: r.name,
      singular: r.singularName || r.kind.toLowerCase(),
      shortNames: r.shortNames ?? [],
      namespaced: r.namespaced,
      status: withStatus.has(r.name),
    }));
}

const idOf = (r: Pick<ServedResource, 'plural' | 'group'>): string => `${r.plural}.${r.group}`;
const unique = (xs: readonly string[]): string[] => [...new Set(xs)].sort();

/** A hint for messages only: namespaced, with a status, and a Kind ending in Request (InternalRequest, SigningRequest). */
function looksLikeRequestKind(r: ServedResource): boolean {
  return r.namespaced && r.status && /Request$/.test(r.kind);
}

/**
 * The one resource a query names among those served: its Kind (any case),
 * plural, singular or a short name matches, in the group and version when
 * given. Throws CLI_KIND_UNKNOWN when none does (naming the request kinds
 * there), when several do (naming them), or when the one found cannot be a
 * request kind (cluster-scoped, or without a status subresource).
 * `flag` is --kind as given; `where` what was searched, for the message.
 */
export function chooseKind(flag: string, q: KindQuery, served: readonly ServedResource[], where: string): KindRef {
  const want = q.name.toLowerCase();
  const inScope = served.filter((r) => (q.group === undefined || r.group === q.group) && (q.version === undefined || r.version === q.version));
  const hits = inScope.filter((r) => [r.kind.toLowerCase(), r.plural, r.singular, ...r.shortNames].some((n) => n.toLowerCase() === want));
  const ids = unique(hits.map(idOf));
  if (ids.length === 0) {
    const near = unique((q.group !== undefined ? served.filter((r) => r.group === q.group && r.namespaced) : served.filter(looksLikeRequestKind)).map(idOf));
    const scope = q.group !== undefined ? ` (API group ${q.group}${q.version ? `, version ${q.version}` : ''})` : '';
    throw new CliError(
      'CLI_KIND_UNKNOWN',
      `--kind ${flag} names none of ${where}${scope}; ${near.length ? `request kinds there: ${near.join(', ')}` : 'is the kind installed there? (its CRD comes from `internal-services kinds render`)'}`,
    );
  }
  if (ids.length > 1) throw new CliError('CLI_KIND_UNKNOWN', `--kind ${flag} is ambiguous: ${where} has ${ids.join(', ')}; give one of them as --kind`);
  const r = hits[0]!;
  if (!r.namespaced) throw new CliError('CLI_KIND_UNKNOWN', `--kind ${flag} names ${idOf(r)}, which is cluster-scoped: requests are namespaced`);
  if (!r.status) throw new CliError('CLI_KIND_UNKNOWN', `--kind ${flag} names ${idOf(r)}, which has no status subresource: it is not a request kind (the CRD of one comes from \`internal-services kinds render\`)`);
  const builtIn = r.group === GROUP && r.plural === BUILT_IN_KIND.plural;
  return { kind: r.kind, group: r.group, version: r.version, plural: r.plural, singular: r.singular, builtIn };
}

/** A Kind's plural for messages: InternalRequests, SigningRequests, Policies, Classes. */
export function kindPlural(kind: string): string {
  if (/(s|x|z|ch|sh)$/.test(kind)) return `${kind}es`;
  if (/[^aeiou]y$/.test(kind)) return `${kind.slice(0, -1)}ies`;
  return `${kind}s`;
}

/** "an InternalRequest", "a SigningRequest". */
export function withArticle(kind: string): string {
  return `${/^[AEIOU]/i.test(kind) ? 'an' : 'a'} ${kind}`;
}
