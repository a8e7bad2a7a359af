/**
 * The request-kind seam: what object is a request, how its spec is read as a
 * run, and where its status goes.
 *
 * The request path (caches, decide(), the executor, the status writer) works
 * on one shape, an InternalRequest: `spec.request` or `spec.pipeline`, with
 * params, a service account and timeouts, and the status contract of
 * src/api/conditions.ts. A request kind maps its own objects to that shape
 * as they enter the cache (`toRequest`), says what is wrong with a request's
 * shape in its own words (`checkShape`), and makes the body of a status write
 * for its resource (`statusBody`). InternalRequest is the built-in kind,
 * where the first and the last are the identity; a service's own kind (a
 * `SigningRequest` whose fields are a Pipeline's params) is another
 * implementation, and nothing else of the request path changes.
 *
 * Keys and what the controller makes for a request name the kind when it is
 * not the built-in one (api/request-key.ts, ANNOTATION_REQUEST_KIND), so two
 * kinds may use one name in one namespace. Tenants (remote and namespace),
 * and so capacity and fair turns, are shared by every kind.
 */
import { INTERNAL_REQUEST, type InternalRequest, type InternalRequestStatus } from '../api/types.js';
import type { KubeObject, ResourceRef } from '../kube/client.js';
import { checkShape } from './request-shape.js';

export interface RequestKind {
  /** The Kind (`InternalRequest`, `SigningRequest`): in keys, annotations, logs and messages. */
  readonly kind: string;
  /** The resource its objects are listed, watched and written through. */
  readonly resource: ResourceRef;
  /** InternalRequest: its keys and annotations leave the kind out. */
  readonly builtIn: boolean;
  /**
   * The object as the request path reads it: metadata and status as they
   * are, the spec read as an InternalRequest spec. Pure and cheap: called for
   * every object the cache receives. It must not fail; what cannot be read
   * is left out, for checkShape to name.
   */
  toRequest(obj: KubeObject): InternalRequest;
  /** What is wrong with a request's shape, in the words of this kind's fields; undefined when nothing is. */
  checkShape(req: InternalRequest): string | undefined;
  /** The body of a PUT on the status subresource that gives `req` the status `status`. */
  statusBody(req: InternalRequest, status: InternalRequestStatus): KubeObject;
}

/** The built-in kind: InternalRequest, read and written as it is. */
export const INTERNAL_REQUEST_KIND: RequestKind = Object.freeze({
  kind: 'InternalRequest',
  resource: INTERNAL_REQUEST,
  builtIn: true,
  toRequest: (obj: KubeObject) => obj as unknown as InternalRequest,
  checkShape,
  statusBody: (req: InternalRequest, status: InternalRequestStatus) => ({ ...req, status }) as unknown as KubeObject,
});

/** The kind segment of keys and annotations: undefined for the built-in kind. */
export function kindLabel(kind: Pick<RequestKind, 'kind' | 'builtIn'> | undefined): string | undefined {
  return kind && !kind.builtIn ? kind.kind : undefined;
}

/** Checks a set of kinds to serve together: at least one, no two with one Kind or one resource. */
export function checkKinds(kinds: readonly RequestKind[]): void {
  if (!kinds.length) throw new Error('no request kind to serve');
  const seen = new Set<string>();
  for (const k of kinds) {
    const resource = `${k.resource.plural}.${k.resource.group}`;
    for (const id of [`kind ${k.kind}`, `resource ${resource}`]) {
      if (seen.has(id)) throw new Error(`two request kinds share the ${id}`);
      seen.add(id);
    }
    if (!/^[A-Z][A-Za-z0-9]{0,62}$/.test(k.kind)) throw new Error(`request kind ${JSON.stringify(k.kind)} is not a Kind (CamelCase letters and digits)`);
  }
}
