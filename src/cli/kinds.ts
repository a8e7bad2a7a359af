/**
 * `internal-services kinds render`: the remote side of a typed request kind
 * (its CRD, or a kcp APIResourceSchema, and with --rbac the ClusterRoles that
 * grant it alone), printed as YAML for the platform admin to apply.
 *
 * From files (`-f definition.yaml --pipeline pipeline.yaml`), or from the
 * internal cluster (`kinds render NAME --kubeconfig …`): the RequestDefinition
 * of the controller's namespace and its Pipeline, the installed one or, for a
 * resolver reference, the one Tekton's resolver returns (through a
 * ResolutionRequest made for the purpose and removed afterwards).
 */
import { readFileSync } from 'node:fs';
import { Command, Option } from 'commander';
import { parse as parseYaml } from 'yaml';
import { renderYamlDocs } from '../api/crd-render.js';
import { apiResourceSchemaOf } from '../api/kcp-export.js';
import { REQUEST_DEFINITION, type RequestDefinition } from '../api/request-definition.js';
import { renderKind, type DeclaredParam } from '../api/typed-kind-crd.js';
import { connect, describeError, type Cluster } from '../kube/client.js';
import { outcomeOfResolution, resolutionRequest, RESOLUTION_REQUEST, type ResolutionRequest } from '../tekton/resolve.js';
import { startResolution } from '../tekton/resolution-start.js';
import { PIPELINE, type Pipeline } from '../tekton/tekton-types.js';
import { decodeResolved } from '../policy/one-reading.js';

type PipelineLike = Parameters<typeof renderKind>[1];

interface RenderFlags {
  file?: string;
  pipeline?: string;
  kubeconfig?: string;
  namespace: string;
  rbac?: boolean;
  kcp?: boolean;
  controller: string;
  resolveTimeout: string;
}

function readYaml(file: string, what: string): unknown {
  try {
    return parseYaml(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new Error(`cannot read ${what} ${file}: ${(e as Error).message}`);
  }
}

/** `ns/name` (a ServiceAccount) or `user:name`. */
function controllerSubject(s: string): { kind: 'ServiceAccount' | 'User'; name: string; namespace?: string } {
  if (s.startsWith('user:')) return { kind: 'User', name: s.slice(5) };
  const [namespace, name, ...rest] = s.split('/');
  if (!namespace || !name || rest.length) throw new Error(`--controller ${JSON.stringify(s)}: give NAMESPACE/SERVICEACCOUNT or user:NAME`);
  return { kind: 'ServiceAccount', name, namespace };
}

/** The definition's Pipeline as the internal cluster has it: installed, or resolved by Tekton. */
async function pipelineOf(internal: Cluster, namespace: string, def: RequestDefinition, timeoutMs: number): Promise<PipelineLike> {
  if (def.spec.request) {
    const p = await internal.resource<Pipeline>(PIPELINE).tryGet(namespace, def.spec.request);
    if (!p) throw new Error(`Pipeline ${namespace}/${def.spec.request} (spec.request of RequestDefinition ${def.metadata.name}) does not exist`);
    return p as PipelineLike;
  }
  const ref = def.spec.pipelineRef!;
  const rrs = internal.resource<ResolutionRequest>(RESOLUTION_REQUEST);
  const name = `kinds-render-${(def.metadata.name ?? 'x').slice(0, 30)}-${Date.now().toString(36)}`;
  await startResolution(rrs, resolutionRequest(namespace, name, ref.resolver ?? '', (ref.params ?? []).map((p) => ({ name: p.name, value: p.value }))));
  try {
    for (;;) {
      const rr = await rrs.get(namespace, name);
      const out = outcomeOfResolution(rr, new Date(), timeoutMs);
      if (out.state === 'resolved') {
        const read = decodeResolved(typeof out.content === 'string' ? Buffer.from(out.content) : out.content);
        if (!read.ok) throw new Error(`the resolved Pipeline cannot be read one way only: ${read.why}`);
        return read.value as PipelineLike;
      }
      if (out.state === 'failed') throw new Error(`the ${ref.resolver} resolver could not fetch the Pipeline: ${out.message}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  } finally {
    await rrs.delete(namespace, name).catch(() => undefined);
  }
}

export async function renderCommandRun(name: string | undefined, flags: RenderFlags, out: (s: string) => void): Promise<void> {
  const controller = controllerSubject(flags.controller);
  let def: RequestDefinition;
  let pipeline: PipelineLike;
  if (flags.file) {
    if (name) throw new Error('give a RequestDefinition by name (read from the cluster) or -f FILE, not both');
    def = readYaml(flags.file, 'RequestDefinition') as RequestDefinition;
    if (def?.kind !== 'RequestDefinition' || !def.spec) throw new Error(`${flags.file} is not a RequestDefinition`);
    if (!flags.pipeline) throw new Error('with -f, give the Pipeline too: --pipeline FILE');
    pipeline = readYaml(flags.pipeline, 'Pipeline') as PipelineLike;
    if ((pipeline as { kind?: string })?.kind !== 'Pipeline') throw new Error(`${flags.pipeline} is not a Pipeline`);
  } else {
    if (!name) throw new Error('give a RequestDefinition: its NAME (read from the internal cluster) or -f FILE --pipeline FILE');
    const internal = await connect('internal', { ...(flags.kubeconfig ? { kubeconfig: flags.kubeconfig } : {}) });
    try {
      const got = await internal.resource<RequestDefinition>(REQUEST_DEFINITION).tryGet(flags.namespace, name);
      if (!got) throw new Error(`RequestDefinition ${flags.namespace}/${name} does not exist`);
      def = got;
      pipeline = flags.pipeline ? (readYaml(flags.pipeline, 'Pipeline') as PipelineLike) : await pipelineOf(internal, flags.namespace, def, Number(flags.resolveTimeout) * 1000);
    } catch (e) {
      throw new Error(describeError(e));
    } finally {
      internal.close();
    }
  }
  const objs = renderKind(def, pipeline as { spec?: { params?: DeclaredParam[] } }, { ...(flags.rbac ? { rbac: true } : {}), ...(flags.kcp ? { kcp: true } : {}), controller }, (crd) => apiResourceSchemaOf(crd as Parameters<typeof apiResourceSchemaOf>[0]));
  out(renderYamlDocs(objs, `internal-services kinds render from RequestDefinition ${def.metadata?.name ?? ''} and Pipeline ${pipeline?.metadata?.name ?? ''}`));
}

export function kindsCommand(): Command {
  const kinds = new Command('kinds').description("Service teams' own request kinds (RequestDefinitions)").exitOverride();
  kinds.addCommand(
    new Command('render')
      .description("Print a typed kind's remote side: its CRD (or a kcp APIResourceSchema) and, with --rbac, the ClusterRoles that grant it alone")
      .argument('[name]', "a RequestDefinition in the controller's namespace on the internal cluster")
      .option('-f, --file <file>', 'a RequestDefinition file instead (then --pipeline is needed)')
      .option('--pipeline <file>', 'the Pipeline file (default: the Pipeline the internal cluster has for the definition)')
      .option('--kubeconfig <file>', 'the internal cluster (default: as kubectl finds it)')
      .addOption(new Option('-n, --namespace <ns>', "the controller's namespace").default('internal-services'))
      .option('--rbac', 'also the requester and controller ClusterRoles of the kind, and the controller binding')
      .option('--kcp', 'an APIResourceSchema (for a kcp APIExport) instead of the CRD')
      .addOption(new Option('--controller <subject>', "the controller's identity on the remote side, for the binding: NAMESPACE/SERVICEACCOUNT or user:NAME").default('internal-services/internal-services-controller'))
      .addOption(new Option('--resolve-timeout <seconds>', 'how long a resolver may take').default('60'))
      .exitOverride()
      .action(async (name: string | undefined, flags: RenderFlags) => {
        await renderCommandRun(name, flags, (s) => process.stdout.write(s));
      }),
  );
  return kinds;
}
