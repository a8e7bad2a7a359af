/**
 * resourceVersions compared as numbers. Kubernetes calls them opaque, but an
 * apiserver on etcd (kcp included) hands out etcd revisions: decimal
 * integers that only grow. Where the controller must tell an older copy of
 * an object from a newer one (the informer's early lane, the status
 * writer's own writes) it reads them as such — and only when both sides are
 * such numbers; anything else answers undefined, and the caller falls back
 * to what it does without an order. Pure: no I/O.
 */

/** 1 to 19 decimal digits: an etcd revision (an int64) as the apiserver writes it. */
const ETCD_REVISION = /^\d{1,19}$/;

/**
 * A resourceVersion as a number, when it is an etcd-style one; undefined when
 * it is missing, empty or anything else. As BigInt, since revisions may
 * pass 2^53. Leading zeros are read as the number they spell ("007" is 7).
 */
export function rvNumber(rv: string | undefined): bigint | undefined {
  return rv !== undefined && ETCD_REVISION.test(rv) ? BigInt(rv) : undefined;
}

/** Whether resourceVersion `a` is newer than `b`; undefined when either is not an etcd-style number. */
export function rvNewer(a: string | undefined, b: string | undefined): boolean | undefined {
  const x = rvNumber(a);
  const y = rvNumber(b);
  return x === undefined || y === undefined ? undefined : x > y;
}
