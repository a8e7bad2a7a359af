/**
 * Runs the simulated part of the benchmark in a worker thread, so its work
 * does not delay the timestamps the main thread takes, with a keep-alive
 * client: the simulated Tekton executor (src/localenv/simulated/simulated-tekton-executor.ts), or, with
 * `--tekton real`, the simulated kubelet (src/localenv/simulated/kubelet.ts) for the
 * pods real Tekton creates.
 * Messages: in {type:'stop'}; out {type:'started'} | {type:'stopped', completed} | {type:'log', msg}.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { KubeConfig } from '@kubernetes/client-node';
import { SimulatedTektonExecutor, SimulatedKubelet } from '../src/localenv/index.js';
import { useKeepAlive } from './keepalive.js';
import { SimulatedClusterResolver } from './simulated-resolver.js';

export type SimulationWorkerData =
  | { kind: 'executor'; kubeconfigPath: string; namespace: string; delayMs: number }
  | { kind: 'kubelet'; kubeconfigPath: string; stepMs: number };

interface Running {
  stop(): Promise<void>;
  readonly completed: number;
}

const data = workerData as SimulationWorkerData;
const port = parentPort!;
/** One line per pod is noise at benchmark sizes; problems are still passed on. */
const routine = /^simulated kubelet: pod \S+ (Succeeded|Failed)$/;
const log = (msg: string): void => {
  if (!routine.test(msg)) port.postMessage({ type: 'log', msg });
};

async function main(): Promise<void> {
  const kc = new KubeConfig();
  kc.loadFromFile(data.kubeconfigPath);
  await useKeepAlive(kc, 256);
  let running: Running;
  if (data.kind === 'executor') {
    const executor = new SimulatedTektonExecutor(kc, log).startAuto({ namespace: data.namespace, delayMs: data.delayMs });
    // With no Tekton, the ResolutionRequests of cluster-resolver requests (--request-shape pipeline) are answered here too.
    const resolver = new SimulatedClusterResolver(kc, data.namespace, log);
    await resolver.start();
    running = { stop: async () => void (await Promise.all([executor.stop(), resolver.stop()])), get completed() { return executor.completed; } };
  } else {
    const kubelet = new SimulatedKubelet(kc, { stepMs: data.stepMs, log });
    kubelet.start();
    running = kubelet;
  }
  port.on('message', (m: { type: string }) => {
    if (m.type === 'stop') {
      void running.stop().then(() => {
        port.postMessage({ type: 'stopped', completed: running.completed });
        port.close();
      });
    }
  });
  port.postMessage({ type: 'started' });
}

main().catch((e: unknown) => port.postMessage({ type: 'log', msg: `${data.kind} worker failed: ${String(e)}` }));
