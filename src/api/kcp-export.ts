/**
 * The request API as kcp publishes it (config/kcp/provider): one
 * APIResourceSchema per remote-side CRD, made from the very CRD objects of
 * crd.ts (so one definition serves both), and the APIExport naming them.
 *
 * Only InternalRequest is served to the remote (tenant) side; the
 * InternalServicesConfig and the InternalRequestApproval live on the internal
 * cluster and are not exported.
 *
 * An APIResourceSchema cannot be changed once created, so its name carries a
 * hash of its spec: a changed API is a new schema, and the regenerated
 * APIExport points at it (kcp then moves the bindings to it).
 */
import { createHash } from 'node:crypto';
import { internalRequestCrd } from './crd.js';
import { GROUP } from './types.js';

/** The APIExport's name: the API group, the name tenants bind to. */
export const KCP_EXPORT_NAME = GROUP;
/**
 * The Events the controller records about requests, in the tenant's
 * namespace (src/kube/events.ts), are the one thing it needs beyond the
 * exported resource: a permission claim on core/v1 events, create only.
 */
export const KCP_EVENTS_CLAIM = { group: '', resource: 'events', verbs: ['create'] } as const;
// No claim on core.kcp.io logicalclusters for a workspace's path: kcp would
// serve it, but its kcp.io/path is the workspace admin's to set. A path is
// mapped to its logical cluster through the parent's Workspace instead
// (config/kcp/parent, docs/kcp.md).

interface CrdLike {
  spec: {
    group: string;
    names: { plural: string };
    scope: string;
    versions: Array<{ schema: { openAPIV3Schema: object } } & Record<string, unknown>>;
  };
}

/**
 * The APIResourceSchema of a CRD: the same spec, each version's schema
 * unwrapped from openAPIV3Schema. kcp v0.28's schema versions have no
 * selectableFields, so they are left out (on kcp, unfinished requests are not
 * selected by field: the controller serves them once its list is in).
 */
export function apiResourceSchemaOf(crd: CrdLike): object {
  const { group, names, scope, versions } = crd.spec;
  const spec = {
    group,
    names,
    scope,
    versions: versions.map(({ schema, selectableFields: _, ...rest }) => ({ ...rest, schema: schema.openAPIV3Schema })),
  };
  const hash = createHash('sha256').update(JSON.stringify(spec)).digest('hex').slice(0, 10);
  return {
    apiVersion: 'apis.kcp.io/v1alpha1',
    kind: 'APIResourceSchema',
    metadata: { name: `h${hash}.${names.plural}.${group}` },
    spec,
  };
}

export const internalRequestSchema = apiResourceSchemaOf(internalRequestCrd as CrdLike);

const schemaName = (s: object): string => (s as { metadata: { name: string } }).metadata.name;

/** The APIExport of the remote-side API: the request resource and the Events claim. */
export const apiExport = {
  apiVersion: 'apis.kcp.io/v1alpha2',
  kind: 'APIExport',
  metadata: { name: KCP_EXPORT_NAME },
  spec: {
    resources: [
      {
        group: GROUP,
        name: (internalRequestCrd as CrdLike).spec.names.plural,
        schema: schemaName(internalRequestSchema),
        storage: { crd: {} },
      },
    ],
    permissionClaims: [{ group: KCP_EVENTS_CLAIM.group, resource: KCP_EVENTS_CLAIM.resource, verbs: [...KCP_EVENTS_CLAIM.verbs] }],
  },
};

/** File name under config/kcp/provider → object (generated; see gen-crds.ts). */
export const kcpProviderFiles: Record<string, object> = {
  'apiresourceschema_internalrequests.yaml': internalRequestSchema,
  'apiexport.yaml': apiExport,
};
