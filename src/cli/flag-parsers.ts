/**
 * The argument parsers of the controller's flags (commander's argParser):
 * each returns the value or throws InvalidArgumentError saying what to write.
 */
import { InvalidArgumentError } from 'commander';
import { REMOTE_NAME_PATTERN } from '../policy/tenant.js';
import { parseDuration } from '../util/duration.js';

/** A size in bytes: 1048576, 512Mi, 1Gi, 100M (Kubernetes quantity suffixes). */
export function byteSize(v: string): number {
  const m = /^([0-9]+)(Ki|Mi|Gi|Ti|K|M|G|T)?$/.exec(v.trim());
  if (!m) throw new InvalidArgumentError(`${JSON.stringify(v)} is not a size (e.g. 512Mi, 1Gi, 1048576)`);
  const mult: Record<string, number> = { '': 1, K: 1e3, M: 1e6, G: 1e9, T: 1e12, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4 };
  const n = Number(m[1]) * mult[m[2] ?? '']!;
  if (n < 1024 * 1024) throw new InvalidArgumentError(`${JSON.stringify(v)} is below 1Mi`);
  return n;
}

export function positiveInt(v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 1 || n > 256) throw new InvalidArgumentError('must be an integer from 1 to 256');
  return n;
}

export function remoteName(v: string): string {
  if (!REMOTE_NAME_PATTERN.test(v)) throw new InvalidArgumentError('must be a DNS label: lower-case letters, digits and "-", at most 63');
  return v;
}

export function workspacePaths(v: string, previous: string[] | undefined): string[] {
  const paths = v.split(',').map((x) => x.trim()).filter(Boolean);
  for (const p of paths) if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(:[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(p)) throw new InvalidArgumentError(`${JSON.stringify(p)} is not a workspace path (e.g. root:org)`);
  return [...(previous ?? []), ...paths];
}

export function secretNames(v: string, previous: string[] | undefined): string[] {
  const names = v.split(',').map((x) => x.trim()).filter(Boolean);
  for (const n of names) if (!/^[a-z0-9]([-.a-z0-9]*[a-z0-9])?$/.test(n) || n.length > 253) throw new InvalidArgumentError(`${JSON.stringify(n)} is not a Secret name`);
  return [...(previous ?? []), ...names];
}

export function namespaceName(v: string): string {
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(v) || v.length > 63) throw new InvalidArgumentError('must be a namespace name: lower-case letters, digits and "-", at most 63');
  return v;
}

export function shortDuration(v: string): number {
  const ms = parseDuration(v);
  if (ms === undefined || ms < 100) throw new InvalidArgumentError('must be a duration of at least 100ms, like 2s');
  return ms;
}

export function duration(v: string): number {
  const ms = parseDuration(v);
  if (ms === undefined || ms < 1000) throw new InvalidArgumentError('must be a duration of at least 1s, like 10m or 1h');
  return ms;
}
