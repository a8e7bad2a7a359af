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
import { INCUMBENT_NAMESPACE } from '../migrate/incumbent-preflight.js';
import { migrateCheck, type CheckReport, type IncumbentConfigSpec, type Judgement } from '../migrate/migrate-check.js';
import { PIPELINE, TASK, type Pipeline } from '../tekton/tekton-types.js';

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
  return migrate;
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
  requests.sort((a, b) => `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`));
  const report = migrateCheck({
    namespace: flags.namespace,
    remote: flags.remoteName,
    requests,
    pipelines: pipelines as Pipeline[],
    tasks: tasks as never,
    incumbent: incumbent?.spec as IncumbentConfigSpec | undefined,
    ours,
    now: new Date(),
  });
  return {
    ...report,
    incumbentConfig: incumbent ? `${flags.incumbentNamespace}/${CONFIG_NAME}` : `none (${flags.incumbentNamespace}/${CONFIG_NAME} not found)`,
    ourConfig: ours ? `${flags.namespace}/${CONFIG_NAME}` : `none yet (${flags.namespace}/${CONFIG_NAME} not found)`,
  };
}

const show = (j: Judgement): string => (j.here === 'refused' ? `REFUSED (${j.code}): ${j.message}` : j.here === 'waits' ? `waits: ${j.message}` : j.message === 'runs' ? 'runs' : `runs: ${j.message}`);

function render(r: CheckReport & { incumbentConfig: string; ourConfig: string }, flags: CheckFlags): string {
  const out: string[] = [];
  out.push(`the Go controller's configuration: ${r.incumbentConfig}`);
  out.push(`this controller's configuration: ${r.ourConfig}; requests judged under ${r.judgedUnder === 'ours' ? 'it' : "the Go controller's, carried over"}`);
  out.push(`requests on remote ${JSON.stringify(flags.remoteName)}: ${r.counts.requests} (${r.counts.followed} in progress under the Go controller: followed to their end after the switch, not judged again)`);
  out.push('');
  for (const row of r.rows) {
    out.push(`${row.request}  (Go: ${row.incumbent}${row.followed ? '; followed, not judged again' : ''})`);
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
