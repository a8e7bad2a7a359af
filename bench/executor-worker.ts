/**
 * Runs the simulated Tekton executor (src/envtest/executor.ts) in a worker
 * thread, so its work does not delay the timestamps the main thread takes.
 * Messages: in {type:'stop'}; out {type:'started'} | {type:'stopped', completed} | {type:'log', msg}.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { KubeConfig } from '@kubernetes/client-node';
import { SimulatedTektonExecutor } from '../src/envtest/executor.js';
import { useKeepAlive } from './keepalive.js';

interface ExecutorWorkerData {
  kubeconfigPath: string;
  namespace: string;
  delayMs: number;
}

const data = workerData as ExecutorWorkerData;
const port = parentPort!;

async function main(): Promise<void> {
  const kc = new KubeConfig();
  kc.loadFromFile(data.kubeconfigPath);
  await useKeepAlive(kc, 256);
  const exec = new SimulatedTektonExecutor(kc, (msg) => port.postMessage({ type: 'log', msg }));
  const handle = exec.startAuto({ namespace: data.namespace, delayMs: data.delayMs });
  port.on('message', (m: { type: string }) => {
    if (m.type === 'stop') {
      void handle.stop().then(() => {
        port.postMessage({ type: 'stopped', completed: handle.completed });
        port.close();
      });
    }
  });
  port.postMessage({ type: 'started' });
}

main().catch((e: unknown) => port.postMessage({ type: 'log', msg: `executor worker failed: ${String(e)}` }));
