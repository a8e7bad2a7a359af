/**
 * `internal-services migrate check`: before switching from the Go controller
 * (docs/migrating.md), which of the requests on the remote cluster this
 * controller would refuse and why, and the InternalServicesConfig it needs
 * to serve what the Go controller served. It reads and changes nothing
 * (src/migrate/migrate-check.ts decides).
 */
import { Command, Option } from 'commander';
import { stringify as toYaml } from 'yaml';
import { CONFIG_NAME, INTERNAL_SERVICES_CONFIG, type InternalServicesConfig } from '../api/config-types.js';
import { INTERNAL_REQUEST, type InternalRequest } from '../api/types.js';
import { connect, describeError, type Cluster } from '../kube/client.js';
import { checkIncumbent, INCUMBENT_NAMESPACE, type IncumbentVerdict } from '../migrate/incumbent-preflight.js';
import { migrateCheck, type CheckReport, type IncumbentConfigSpec, type Judgement } from '../migrate/migrate-check.js';
import { handOverWrites, planRollback, type RollbackPlan } from '../migrate/rollback.js';
import type { RunsSeen } from '../migrate/run-location.js';
import { INCUMBENT_SELECTOR } from '../requests/incumbent.js';
import { PIPELINE, PIPELINERUN, TASK, type Pipeline, type PipelineRun } from '../tekton/tekton-types.js';
import { isWorkspacePath } from './request/request-name.js';
import { compareText } from '../util/compare.js';

interface CheckFlags {
  kubeconfig?: string;
  remoteKubeconfig: string;
  remoteName: string;
  namespace: string;
  incumbentNamespace: string;
  output: 'text' | 'json';
}

export function migrateCommand(): Command {
  const migrate = new Command('migrate').description('switching from the Go controller (konflux-ci/internal-services): docs/migrating.md');
  migrate
    .command('check')
    .description("which requests on the remote cluster this controller would refuse, and why, and the InternalServicesConfig it needs to serve what the Go controller served; reads only")
    .addOption(new Option('--kubeconfig <path>', 'kubeconfig of the internal cluster (default: KUBECONFIG, in-cluster)').env('KUBECONFIG'))
    .addOption(new Option('--remote-kubeconfig <path>', 'kubeconfig of the remote cluster whose requests are checked').makeOptionMandatory())
    .addOption(new Option('--remote-name <name>', "the remote's name in this controller's configuration (its --remote-name)").default('default'))
    .addOption(new Option('--namespace <name>', "this controller's namespace on the internal cluster").default('internal-services'))
    .addOption(new Option('--incumbent-namespace <name>', "the Go controller's namespace (its InternalServicesConfig \"config\" is read there)").default(INCUMBENT_NAMESPACE))
    .addOption(new Option('-o, --output <format>', 'text, or json').choices(['text', 'json']).default('text'))
    .action(async (flags: CheckFlags) => {
      const report = await run(flags);
      process.stdout.write(flags.output === 'json' ? `${JSON.stringify(report, null, 2)}\n` : render(report, flags));
    });
  migrate
    .command('rollback')
    .description('hand the requests in flight back to the Go controller: refuses (exit 1, nothing written) while this controller runs or a request is in a state the Go controller cannot continue; docs/migrating.md')
    .addOption(new Option('--kubeconfig <path>', 'kubeconfig of the internal cluster (default: KUBECONFIG, in-cluster)').env('KUBECONFIG'))
    .addOption(new Option('--remote-kubeconfig <path>', 'kubeconfig of the remote cluster the Go controller serves').makeOptionMandatory())
    .addOption(new Option('--namespace <name>', "this controller's namespace on the internal cluster (its PipelineRuns, Deployment and Lease)").default('internal-services'))
    .addOption(new Option('--deployment <name>', "this controller's Deployment (it must be scaled to 0)").default('internal-services-controller'))
    .addOption(new Option('--lease <name>', "this controller's leader-election Lease (its --leader-election-id; it must not be held)").default('internal-services-controller'))
    .addOption(new Option('--incumbent-namespace <name>', "the Go controller's namespace (its SERVICE_NAMESPACE: its InternalServicesConfig \"config\" is read there)").default(INCUMBENT_NAMESPACE))
    .addOption(new Option('--dry-run', 'print the plan and whether it can be carried out; write nothing'))
    .addOption(new Option('-o, --output <format>', 'text, or json').choices(['text', 'json']).default('text'))
    .action(async (flags: RollbackFlags) => {
      const result = await rollback(flags);
      process.stdout.write(flags.output === 'json' ? `${JSON.stringify(result, null, 2)}\n` : renderRollback(result, flags));
      if (!result.done && !(flags.dryRun && result.plan.ready && result.stopped.clear)) process.exitCode = 1;
    });
  return migrate;
}

interface RollbackFlags {
  kubeconfig?: string;
  remoteKubeconfig: string;
  namespace: string;
  deployment: string;
  lease: string;
  incumbentNamespace: string;
  dryRun?: boolean;
  output: 'text' | 'json';
}

interface RollbackResult {
  plan: RollbackPlan;
  /** Whether this controller is stopped (its Deployment scaled to 0, its Lease not held). */
  stopped: IncumbentVerdict;
  incumbentConfig: string;
  /** What was written, one line each. */
  written: string[];
  /** True once every write was made: the Go controller may start. */
  done: boolean;
}

/** The rollback: read, plan (src/migrate/rollback.ts), and unless refused or a dry run, write. */
async function rollback(flags: RollbackFlags): Promise<RollbackResult> {
  const internal: Cluster = await connect('internal', flags.kubeconfig ? { kubeconfig: flags.kubeconfig } : {});
  const remote: Cluster = await connect('remote', { kubeconfig: flags.remoteKubeconfig });
  const stopped = await checkIncumbent(internal.kc, { namespace: flags.namespace, deployment: flags.deployment, lease: flags.lease }, () => new Date(), {
    name: 'this controller',
    refusal: 'not rolling back while this controller may run (it would go on with the requests handed over)',
    unreadable: 'the rollback needs to read it',
  });
  const incumbentRef = `${flags.incumbentNamespace}/${CONFIG_NAME}`;
  const incumbent = await tryRead(`the Go controller's InternalServicesConfig ${incumbentRef}`, () => internal.resource<InternalServicesConfig>(INTERNAL_SERVICES_CONFIG).tryGet(flags.incumbentNamespace, CONFIG_NAME));
  const requestsClient = remote.resource<InternalRequest>(INTERNAL_REQUEST);
  const runsClient = internal.resource<PipelineRun>(PIPELINERUN);
  const requests = (await tryRead('the InternalRequests of the remote cluster', () => requestsClient.list(undefined)))!.items;
  const runs = (await tryRead(`the PipelineRuns of namespace ${flags.namespace}`, () => runsClient.list(flags.namespace)))!.items;
  requests.sort((a, b) => compareText(`${a.metadata.namespace}/${a.metadata.name}`, `${b.metadata.namespace}/${b.metadata.name}`));
  const plan = planRollback({ namespace: flags.namespace, requests, runs, incumbent: incumbent?.spec as IncumbentConfigSpec | undefined, incumbentConfig: incumbentRef, now: new Date() });
  const result: RollbackResult = { plan, stopped, incumbentConfig: incumbent ? incumbentRef : `none (${incumbentRef} not found)`, written: [], done: false };
  if (flags.dryRun || !plan.ready || !stopped.clear) return result;
  // Each write is conditional on the version read (a 409 means something
  // changed since: run the rollback again). The run is labelled before the
  // request is written, so a rollback stopped half way is finished by the next.
  for (const row of plan.rows) {
    const step = row.step;
    const ns = step.kind === 'release' || step.kind === 'handOver' ? step.request.metadata.namespace ?? '' : '';
    try {
      if (step.kind === 'release') {
        await requestsClient.replaceStatus(ns, step.request.metadata.name ?? '', { ...step.request, status: {} });
        result.written.push(`${row.request}: status cleared (the Go controller takes it as new)`);
      } else if (step.kind === 'handOver') {
        const need = handOverWrites(step);
        const run = step.run;
        if (need.run) {
          await runsClient.patchMerge(run.metadata.namespace ?? flags.namespace, run.metadata.name ?? '', { metadata: { resourceVersion: run.metadata.resourceVersion, labels: step.labels, annotations: step.annotations } });
          result.written.push(`${row.request}: PipelineRun ${row.run} labelled for the Go controller`);
        }
        if (need.status) {
          await requestsClient.replaceStatus(ns, step.request.metadata.name ?? '', { ...step.request, status: step.status });
          result.written.push(`${row.request}: status handed over (startTime; the message says who follows it; the Progressing condition, which the Go controller does not write, removed)`);
        }
      }
    } catch (e) {
      throw new Error(`rollback stopped at ${row.request} (${result.written.length} write(s) made before: ${result.written.join('; ') || 'none'}): ${describeError(e)}; run it again`);
    }
  }
  result.done = true;
  return result;
}

function renderRollback(r: RollbackResult, flags: RollbackFlags): string {
  const out: string[] = [];
  const c = r.plan.counts;
  out.push(`the Go controller's configuration: ${r.incumbentConfig}`);
  out.push(`this controller: ${r.stopped.message}`);
  out.push(`unfinished requests: ${c.unfinished} (the Go controller takes ${c.take} as they are; ${c.release} released; ${c.handOver} handed over; ${c.blocked} blocking)`);
  out.push('');
  for (const row of r.plan.rows) {
    const s = row.step;
    out.push(`${row.request}  (here: ${row.here}${row.run ? `, run ${row.run}` : ''})`);
    out.push(s.kind === 'blocked' ? `    BLOCKS: ${s.why}; ${s.todo}` : `    ${s.kind}: ${s.why}`);
  }
  out.push('');
  if (r.written.length) out.push(`written:\n${r.written.map((w) => `  - ${w}`).join('\n')}`);
  if (r.done) {
    out.push(`done: the requests are the Go controller's now. Start it (kubectl -n ${flags.incumbentNamespace} scale deployment internal-services-controller-manager --replicas=1); keep this controller at 0 replicas.`);
  } else if (!r.plan.ready || !r.stopped.clear) {
    const why = [!r.stopped.clear ? 'this controller may still run' : '', !r.plan.ready ? `${c.blocked} request(s) block it` : ''].filter(Boolean).join(' and ');
    out.push(`REFUSED${flags.dryRun ? ' (dry run)' : ''}: ${why}; nothing was written.${!r.plan.ready ? ' Run this controller with --drain until they have ended here (it takes nothing new meanwhile), stop it, and run the rollback again.' : ''}`);
  } else {
    out.push('dry run: nothing written; without --dry-run these writes are made.');
  }
  return `${out.join('\n')}\n`;
}

async function tryRead<T>(what: string, f: () => Promise<T | undefined>): Promise<T | undefined> {
  try {
    return await f();
  } catch (e) {
    throw new Error(`cannot read ${what}: ${describeError(e)}`);
  }
}

async function run(flags: CheckFlags): Promise<CheckReport & { incumbentConfig: string; ourConfig: string }> {
  const internal: Cluster = await connect('internal', flags.kubeconfig ? { kubeconfig: flags.kubeconfig } : {});
  const remote: Cluster = await connect('remote', { kubeconfig: flags.remoteKubeconfig });
  const configs = internal.resource<InternalServicesConfig>(INTERNAL_SERVICES_CONFIG);
  const incumbent = await tryRead(`the Go controller's InternalServicesConfig ${flags.incumbentNamespace}/${CONFIG_NAME}`, () => configs.tryGet(flags.incumbentNamespace, CONFIG_NAME));
  const ours = flags.incumbentNamespace === flags.namespace ? incumbent : await tryRead(`InternalServicesConfig ${flags.namespace}/${CONFIG_NAME}`, () => configs.tryGet(flags.namespace, CONFIG_NAME));
  const pipelines = (await tryRead(`the Pipelines of namespace ${flags.namespace}`, () => internal.resource<Pipeline & { apiVersion?: string; kind?: string }>(PIPELINE).list(flags.namespace)))!.items;
  const tasks = (await tryRead(`the Tasks of namespace ${flags.namespace}`, () => internal.resource(TASK).list(flags.namespace)))!.items;
  const requests = (await tryRead('the InternalRequests of the remote cluster', () => remote.resource<InternalRequest>(INTERNAL_REQUEST).list(undefined)))!.items;
  // Which ServiceAccounts exist (a request naming a missing one is refused here); unknown without the right to list them.
  const serviceAccounts = await internal.core.listNamespacedServiceAccount({ namespace: flags.namespace }).then(
    (l) => new Set(l.items.map((sa) => sa.metadata?.name ?? '')),
    () => undefined,
  );
  // Where the Go controller's runs are: in this controller's namespace and in its own.
  const runs: RunsSeen = { runs: [], namespaces: [...new Set([flags.namespace, flags.incumbentNamespace])], unreadable: {} };
  for (const ns of runs.namespaces) {
    await internal.resource<PipelineRun>(PIPELINERUN).list(ns, { labelSelector: INCUMBENT_SELECTOR }).then(
      (l) => void (runs.runs as PipelineRun[]).push(...l.items),
      (e: unknown) => void ((runs.unreadable as Record<string, string>)[ns] = describeError(e)),
    );
  }
  requests.sort((a, b) => compareText(`${a.metadata.namespace}/${a.metadata.name}`, `${b.metadata.namespace}/${b.metadata.name}`));
  const report = migrateCheck({
    namespace: flags.namespace,
    remote: flags.remoteName,
    workspace: kcpWorkspaceOf(remote.server),
    requests,
    pipelines: pipelines as Pipeline[],
    tasks: tasks as never,
    incumbent: incumbent?.spec as IncumbentConfigSpec | undefined,
    ours,
    serviceAccounts,
    runs,
    now: new Date(),
  });
  return {
    ...report,
    incumbentConfig: incumbent ? `${flags.incumbentNamespace}/${CONFIG_NAME}` : `none (${flags.incumbentNamespace}/${CONFIG_NAME} not found)`,
    ourConfig: ours ? `${flags.namespace}/${CONFIG_NAME}` : `none yet (${flags.namespace}/${CONFIG_NAME} not found)`,
  };
}

/** The kcp workspace path a server URL names (`https://HOST/clusters/root:org:team`), if it names one by path. */
export function kcpWorkspaceOf(server: string): string | undefined {
  const i = server.indexOf('/clusters/');
  if (i < 0) return undefined;
  const ws = decodeURIComponent(server.slice(i + '/clusters/'.length).replace(/\/+$/, ''));
  return isWorkspacePath(ws) && ws.includes(':') ? ws : undefined;
}

const show = (j: Judgement): string => (j.here === 'refused' ? `REFUSED (${j.code}): ${j.message}` : j.here === 'waits' ? `waits: ${j.message}` : j.message === 'runs' ? 'runs' : `runs: ${j.message}`);

function render(r: CheckReport & { incumbentConfig: string; ourConfig: string }, flags: CheckFlags): string {
  const out: string[] = [];
  out.push(`the Go controller's configuration: ${r.incumbentConfig}`);
  out.push(`this controller's configuration: ${r.ourConfig}; requests judged under ${r.judgedUnder === 'ours' ? 'it' : "the Go controller's, carried over"}`);
  out.push(`requests on remote ${JSON.stringify(flags.remoteName)}${r.workspace ? ` (kcp workspace ${r.workspace}: rules are matched against its path)` : ''}: ${r.counts.requests} (${r.counts.followed} in progress under the Go controller: followed to their end after the switch, not judged again)`);
  out.push('');
  for (const row of r.rows) {
    out.push(`${row.request}  (Go: ${row.incumbent}${row.followed ? '; followed, not judged again' : ''})`);
    if (row.run) out.push(`    its run:           ${row.run}`);
    out.push(`    here:              ${show(row.now)}`);
    if (row.proposed.here !== row.now.here || row.proposed.message !== row.now.message) out.push(`    with the proposal: ${show(row.proposed)}`);
  }
  out.push('');
  out.push(`refused here: ${r.counts.refusedNow} of ${r.counts.requests}; with the configuration below: ${r.counts.refusedProposed}${r.counts.refusedProposed ? ' (not a matter of configuration: see each)' : ''}`);
  out.push(r.added.length ? `added to reach it:\n${r.added.map((a) => `  - ${a}`).join('\n')}` : 'nothing to add');
  out.push('');
  out.push('# The InternalServicesConfig this controller needs (kubectl apply -f on the internal cluster; nothing was changed):');
  out.push(toYaml(r.proposal).trimEnd());
  return `${out.join('\n')}\n`;
}
