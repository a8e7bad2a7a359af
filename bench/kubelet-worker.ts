/**
 * With `--tekton real`: runs the simulated kubelet (src/envtest/kubelet.ts)
 * for the TaskRun pods real Tekton creates, in a worker thread, so its work
 * does not delay the timestamps the main thread takes (like the simulated
 * executor, bench/executor-worker.ts), and with a keep-alive client.
 * Messages: in {type:'stop'}; out {type:'started'} | {type:'stopped', completed} | {type:'log', msg}.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { KubeConfig } from '@kubernetes/client-node';
import { SimulatedKubelet } from '../src/envtest/kubelet.js';
import { useKeepAlive } from './keepalive.js';

interface KubeletWorkerData {
  kubeconfigPath: string;
  stepMs: number;
}

const data = workerData as KubeletWorkerData;
const port = parentPort!;

/** One line per pod is noise at benchmark sizes; problems are still passed on. */
const routine = /^simulated kubelet: pod \S+ (Succeeded|Failed)$/;

async function main(): Promise<void> {
  const kc = new KubeConfig();
  kc.loadFromFile(data.kubeconfigPath);
  await useKeepAlive(kc, 256);
  const kubelet = new SimulatedKubelet(kc, { stepMs: data.stepMs, log: (msg) => routine.test(msg) || port.postMessage({ type: 'log', msg }) });
  kubelet.start();
  port.on('message', (m: { type: string }) => {
    if (m.type === 'stop') {
      void kubelet.stop().then(() => {
        port.postMessage({ type: 'stopped', completed: kubelet.completed });
        port.close();
      });
    }
  });
  port.postMessage({ type: 'started' });
}

main().catch((e: unknown) => port.postMessage({ type: 'log', msg: `kubelet worker failed: ${String(e)}` }));
