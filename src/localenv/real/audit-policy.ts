/**
 * The audit policies of the local environment's apiservers, and where their
 * logs go.
 *
 * Two readers ask for an audit log. A test or benchmark that counts requests
 * asks with `audit: true`: every request at level Metadata, one line each
 * (RequestReceived omitted). The integration suite's closed-world check
 * (test/closed-world-audit.ts) asks through INTERNAL_SERVICES_AUDIT_DIR: the
 * internal apiserver records the writes of Tekton's pipelineruns, pipelines,
 * tasks and stepactions with their bodies (RequestResponse), into a file of
 * that directory that outlives the environment, so that every PipelineRun the
 * controller created can be checked against what was installed at that
 * moment. Both together: one policy that gives each what it needs.
 */
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** Set to a directory: every internal apiserver writes there the audit log the closed-world check replays. */
export const AUDIT_DIR_ENV = 'INTERNAL_SERVICES_AUDIT_DIR';
/** The ending of those logs' names (the check reads every file of the directory that ends so). */
export const SUITE_AUDIT_LOG_SUFFIX = '-internal.audit.log';

/** The Tekton resources whose writes the closed-world check replays. */
export const TEKTON_AUDITED_RESOURCES = ['pipelineruns', 'pipelines', 'tasks', 'stepactions'] as const;

export interface AuditWants {
  /** Metadata for every request (a test or benchmark that counts requests). */
  metadata: boolean;
  /** The bodies of the Tekton writes the closed-world check replays. */
  tektonWrites: boolean;
}

/** The policy (YAML) for what is wanted, or undefined when nothing is. */
export function auditPolicy(wants: AuditWants): string | undefined {
  if (!wants.metadata && !wants.tektonWrites) return undefined;
  const rules: string[] = [];
  if (wants.tektonWrites) {
    // The main resources only: status updates (pipelineruns/status, Tekton's
    // own, frequent and large) fall to the next rule. RequestResponse keeps
    // the object as stored, which a patch's body alone does not give.
    rules.push(
      '  - level: RequestResponse',
      '    verbs: ["create", "update", "patch", "delete", "deletecollection"]',
      '    resources:',
      '      - group: tekton.dev',
      `        resources: [${TEKTON_AUDITED_RESOURCES.map((r) => JSON.stringify(r)).join(', ')}]`,
    );
  }
  // The rest: Metadata when a test counts requests, else nothing (the cost of
  // the suite's check stays that of the few writes it reads).
  rules.push(`  - level: ${wants.metadata ? 'Metadata' : 'None'}`);
  // RequestReceived omitted: a request is one line (at ResponseComplete, or
  // Panic; watches also have ResponseStarted), so counts are line counts.
  return ['apiVersion: audit.k8s.io/v1', 'kind: Policy', 'omitStages: ["RequestReceived"]', 'rules:', ...rules, ''].join('\n');
}

let sequence = 0;

/**
 * A fresh file name in INTERNAL_SERVICES_AUDIT_DIR for one internal
 * apiserver's log (the directory is made if need be), or undefined when the
 * variable is not set. Unique per process and start: <pid>-<ms>-<n>-internal.audit.log.
 */
export function suiteAuditLogPath(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const dir = env[AUDIT_DIR_ENV];
  if (!dir) return undefined;
  mkdirSync(resolve(dir), { recursive: true });
  return join(resolve(dir), `${process.pid}-${Date.now()}-${++sequence}${SUITE_AUDIT_LOG_SUFFIX}`);
}

/**
 * kube-apiserver's flags for a JSON-lines log. Blocking: each event is
 * written before the response is sent, so a client that has seen a response
 * finds it in the file. Nothing is cut or rotated away: events are not
 * truncated (the default, said here), and the size before a rotation
 * (0 would mean lumberjack's 100 MB) is far more than a test writes.
 */
export function auditFlags(policyFile: string, logPath: string): string[] {
  return [
    `--audit-policy-file=${policyFile}`,
    `--audit-log-path=${logPath}`,
    '--audit-log-format=json',
    '--audit-log-mode=blocking',
    '--audit-log-truncate-enabled=false',
    '--audit-log-maxsize=1000000',
  ];
}
