/**
 * Work-queue keys of requests, and the key an object the controller made for
 * a request (PipelineRun, ResolutionRequest, approval) maps back to.
 *
 * A key names the remote, the namespace and the name: `remote/namespace/name`.
 * A request of a kind other than the built-in InternalRequest adds its kind as
 * a fourth segment (`remote/namespace/name/SigningRequest`), so that two kinds
 * may use one name in one namespace; InternalRequest keys keep the form they
 * had before kinds existed, and so do the annotations of what was made for them.
 * None of the parts can hold a `/` (remote names and namespaces are DNS
 * labels, names DNS subdomains, kinds CamelCase words).
 */

export interface RequestKeyParts {
  remote: string;
  namespace: string;
  name: string;
  /** The request's kind; undefined for the built-in InternalRequest. */
  kind?: string | undefined;
}

export function requestKey(p: RequestKeyParts): string {
  const base = `${p.remote}/${p.namespace}/${p.name}`;
  return p.kind ? `${base}/${p.kind}` : base;
}

/** A key's parts; `cacheKey` is `namespace/name`, the key within one kind's cache of one remote. */
export function splitRequestKey(key: string): RequestKeyParts & { cacheKey: string } {
  const [remote = '', namespace = '', name = '', kind] = key.split('/');
  return { remote, namespace, name, ...(kind ? { kind } : {}), cacheKey: `${namespace}/${name}` };
}

/** The tenant a key belongs to (`remote/namespace`): the unit of fair turns in the work queue. */
export function tenantOfKey(key: string): string {
  const k = splitRequestKey(key);
  return `${k.remote}/${k.namespace}`;
}
