/**
 * The controller under test gets the memory limit its Deployment sets
 * (`resources.limits.memory` in config/manager/manager.yaml and the chart:
 * 512 MiB), as a memory cgroup, because Node.js sizes V8's heap from it: in
 * a 512 MiB cgroup V8's heap limit is ~259 MB, on this 24 GB machine without
 * one 4,144 MB, and with that much room V8 lets old space fill with garbage
 * between major collections (a 1,000-request burst peaked at 137 MB without
 * the limit and ~100 MB with it, in one sitting). Measuring without it would
 * measure a process no deployment runs.
 *
 * A cgroup needs a writable cgroup file system (root, v2 or v1 memory
 * controller); where there is none the controller runs without a limit and
 * the report says so.
 */
import { existsSync, mkdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The Deployment's limits.memory (config/manager/manager.yaml, charts/internal-services/values.yaml). */
export const DEPLOYMENT_MEMORY_LIMIT_MIB = 512;

export interface MemoryLimit {
  /** MiB, or 0 for none. */
  readonly mib: number;
  /** Where it is (cgroup path), or why there is none. */
  readonly how: string;
  /** The shell prefix that moves the shell (and so the command it execs) into the cgroup; empty without one. */
  readonly prefix: string;
  remove(): void;
}

const NONE = (why: string): MemoryLimit => ({ mib: 0, how: why, prefix: '', remove: () => {} });

/** A memory cgroup of `mib` MiB named after this process and `name`, or none (mib 0, or no writable cgroup file system). */
export function memoryLimit(mib: number, name: string): MemoryLimit {
  if (mib <= 0) return NONE('none (--memory-limit 0)');
  const bytes = String(mib * 1024 * 1024);
  const leaf = `internal-services-bench-${process.pid}-${name}`;
  const candidates: Array<{ dir: string; limitFile: string; version: string }> = [
    { dir: '/sys/fs/cgroup', limitFile: 'memory.max', version: 'v2' },
    { dir: '/sys/fs/cgroup/memory', limitFile: 'memory.limit_in_bytes', version: 'v1' },
  ];
  const problems: string[] = [];
  for (const c of candidates) {
    // v2 only where the memory controller is there (the unified root lists cgroup.controllers).
    if (c.version === 'v2' && !existsSync(join(c.dir, 'cgroup.controllers'))) continue;
    if (c.version === 'v1' && !existsSync(join(c.dir, 'memory.limit_in_bytes'))) continue;
    const path = join(c.dir, leaf);
    try {
      mkdirSync(path, { recursive: true });
      writeFileSync(join(path, c.limitFile), bytes);
      const procs = join(path, 'cgroup.procs');
      return {
        mib,
        how: `cgroup ${c.version} ${path}`,
        prefix: `echo $$ > '${procs}' && `,
        remove: () => {
          try {
            rmdirSync(path);
          } catch {
            /* still has a process, or gone */
          }
        },
      };
    } catch (e) {
      problems.push(`${c.version}: ${(e as Error).message}`);
      try {
        rmdirSync(path);
      } catch {
        /* never made */
      }
    }
  }
  return NONE(`none: no writable memory cgroup (${problems.join('; ') || 'no cgroup file system with a memory controller'})`);
}
