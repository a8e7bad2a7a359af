/**
 * Request kinds written as code (a RequestKind, src/requests/request-kind.ts),
 * served from the command line: `--request-kind-module PATH` loads an ES
 * module whose default export is a RequestKind or a list of them; they are
 * served beside InternalRequest (and the typed kinds of RequestDefinitions).
 * A module that cannot be loaded, or exports something that is not a request
 * kind, is a configuration error naming the module and what is wrong.
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError } from '../errors.js';
import { checkKinds, INTERNAL_REQUEST_KIND, type RequestKind } from '../requests/request-kind.js';

const FUNCTIONS = ['toRequest', 'checkShape', 'statusBody'] as const;

/** What is wrong with a value as a RequestKind, or undefined. */
export function notARequestKind(v: unknown): string | undefined {
  if (typeof v !== 'object' || v === null) return 'it is not an object';
  const k = v as Record<string, unknown>;
  if (typeof k['kind'] !== 'string') return 'it has no kind (a string)';
  const r = k['resource'] as Record<string, unknown> | undefined;
  if (typeof r !== 'object' || r === null || typeof r['group'] !== 'string' || typeof r['version'] !== 'string' || typeof r['plural'] !== 'string') return 'its resource is not {group, version, plural}';
  if (k['builtIn'] !== false) return 'builtIn must be false (only InternalRequest is built in)';
  for (const f of FUNCTIONS) if (typeof k[f] !== 'function') return `it has no ${f}() function`;
  return undefined;
}

/** Loads the request kinds of these modules; the kinds served are InternalRequest and these. */
export async function loadKindModules(paths: readonly string[]): Promise<RequestKind[]> {
  const kinds: RequestKind[] = [];
  for (const p of paths) {
    let mod: { default?: unknown };
    try {
      mod = (await import(pathToFileURL(resolve(p)).href)) as { default?: unknown };
    } catch (e) {
      throw new ConfigError('CONFIG_FLAG', `--request-kind-module ${JSON.stringify(p)} cannot be loaded: ${(e as Error).message.split('\n')[0]}`);
    }
    const exported = Array.isArray(mod.default) ? (mod.default as unknown[]) : [mod.default];
    if (!exported.length) throw new ConfigError('CONFIG_FLAG', `--request-kind-module ${JSON.stringify(p)} exports no request kind (its default export is an empty list)`);
    for (const [i, k] of exported.entries()) {
      const why = notARequestKind(k);
      if (why) throw new ConfigError('CONFIG_FLAG', `--request-kind-module ${JSON.stringify(p)}: its default export${exported.length > 1 ? `[${i}]` : ''} is not a request kind: ${why} (see docs/request-kinds.md)`);
      kinds.push(k as RequestKind);
    }
  }
  try {
    checkKinds([INTERNAL_REQUEST_KIND, ...kinds]);
  } catch (e) {
    throw new ConfigError('CONFIG_FLAG', `--request-kind-module: ${(e as Error).message}`);
  }
  return kinds;
}
