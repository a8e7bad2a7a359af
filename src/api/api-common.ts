/** What the API's CRDs share: the group and version, value patterns and limits, the duration field, object metadata. */
import { schema } from './schema.js';

export const GROUP = 'appstudio.redhat.com';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;

/** Go-style duration as Tekton accepts it: "1h", "30m", "1h30m", "90s", "1.5h". */
export const DURATION_PATTERN = '^([0-9]{1,9}(\\.[0-9]{1,9})?(ns|us|µs|ms|s|m|h))+$';
/** RFC 1123 label: namespaces, service accounts. */
export const DNS_LABEL_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
/** An allowList entry: a namespace, optionally after "remote/", "*\/" (every remote) or a kcp workspace path and "/" ("root:org:team/"). */
/**
 * A tenant glob, as allowList and rules[].namespaces take it: `[remote/]namespace`,
 * either part a glob (`*` within a segment, `**` whole segments; on kcp the
 * remote is a workspace path, `root:org:*`). Matched by policy/glob.ts on
 * the canonical tenant (the workspace path as kcp's Workspaces give it).
 */
export const TENANT_GLOB_PATTERN = '^([-a-z0-9*:]+/)?[-a-z0-9*]+$';
export const TENANT_PATTERN = '^((\\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?(:[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)/)?[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
/** RFC 1123 subdomain: object names such as a Pipeline's. */
export const DNS_SUBDOMAIN_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
/** Kubernetes resource quantity of storage, e.g. 1Gi, 500Mi, 10G. */
export const QUANTITY_PATTERN = '^[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$';

export const durationField = (what: string) =>
  schema({ type: 'string', pattern: DURATION_PATTERN, maxLength: 64, description: `${what} (Go duration, e.g. 1h30m).` });


export interface ObjectMeta {
  name?: string;
  generateName?: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  finalizers?: string[];
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  ownerReferences?: Array<Record<string, unknown>>;
}

/** The longest timeout a request may give at all (administrators set lower maximums in the InternalServicesConfig). */
export const MAX_TIMEOUT = '8760h';
/** What all of a request's params (names and values) may add up to: far below the object size limits, so a request can always receive its final status. */
export const MAX_PARAMS_BYTES = 1048576;
/** The longest single param value. */
export const MAX_PARAM_VALUE_BYTES = 262144;
