/**
 * The real node's identities and configuration files (real-node.ts): a client CA
 * for the internal apiserver and the certificates it signs (the kubelet as
 * system:node:<name> in system:nodes, its serving certificate for the node
 * IP, the apiserver's identity towards the kubelet, the scheduler and the
 * controller manager), kubeconfigs, containerd's config, the CNI network and
 * the KubeletConfiguration. Flags and values: ../shared/notes/real-node-facts.md.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { makeCa, makeLeaf, type Ca } from './pki.js';

export const NODE_NAME = 'internal-services-node';
/** The CNI bridge; its gateway address is the node's IP. */
export const NODE_BRIDGE = 'isnode0';
export const NODE_SUBNET = '10.244.77.0/24';
export const NODE_IP = '10.244.77.1';

export interface NodePki {
  dir: string;
  ca: Ca;
  kubelet: Ca;
  kubeletServing: Ca;
  apiserverKubeletClient: Ca;
  scheduler: Ca;
  controllerManager: Ca;
}

/** Made before the internal apiserver starts: it trusts `ca` for client certificates. */
export function makeNodePki(dir: string): NodePki {
  mkdirSync(dir, { recursive: true });
  const ca = makeCa(dir, 'node-ca', 'internal-services node CA');
  return {
    dir,
    ca,
    kubelet: makeLeaf(dir, ca, 'kubelet-client', { cn: `system:node:${NODE_NAME}`, orgs: ['system:nodes'] }),
    kubeletServing: makeLeaf(dir, ca, 'kubelet-serving', { cn: NODE_NAME, hosts: true, ips: [NODE_IP] }),
    // The apiserver reaches the kubelet (logs, exec) as a cluster admin.
    apiserverKubeletClient: makeLeaf(dir, ca, 'apiserver-kubelet-client', { cn: 'kube-apiserver-kubelet-client', orgs: ['system:masters'] }),
    // The users Kubernetes' bootstrap RBAC grants the two their roles.
    scheduler: makeLeaf(dir, ca, 'scheduler', { cn: 'system:kube-scheduler' }),
    controllerManager: makeLeaf(dir, ca, 'controller-manager', { cn: 'system:kube-controller-manager' }),
  };
}

/** The internal apiserver's flags for a node: client certificates, the kubelet's API, Node authorization, NodeRestriction. */
export function apiserverNodeFlags(pki: NodePki): string[] {
  return [
    `--client-ca-file=${pki.ca.cert}`,
    `--kubelet-client-certificate=${pki.apiserverKubeletClient.cert}`,
    `--kubelet-client-key=${pki.apiserverKubeletClient.key}`,
    `--kubelet-certificate-authority=${pki.ca.cert}`,
    '--kubelet-preferred-address-types=InternalIP',
  ];
}

export function writeKubeconfig(path: string, server: string, caFile: string, id: Ca, user: string): string {
  writeFileSync(
    path,
    toYaml({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'internal', cluster: { server, 'certificate-authority': caFile } }],
      users: [{ name: user, user: { 'client-certificate': id.cert, 'client-key': id.key } }],
      contexts: [{ name: user, context: { cluster: 'internal', user } }],
      'current-context': user,
    }),
    { mode: 0o600 },
  );
  return path;
}

export interface ContainerdPaths {
  root: string;
  state: string;
  socket: string;
  cniConfDir: string;
}

export function containerdPaths(dir: string): ContainerdPaths {
  return { root: join(dir, 'containerd', 'root'), state: join(dir, 'containerd', 'state'), socket: join(dir, 'containerd', 'containerd.sock'), cniConfDir: join(dir, 'cni', 'net.d') };
}

/** containerd 1.6's config (version 2): everything under `dir`, no OOM score changes, the pause image named. */
export function writeContainerdConfig(dir: string, p: ContainerdPaths, pauseImage: string, cniBinDir: string): string {
  mkdirSync(p.cniConfDir, { recursive: true });
  const cri = 'plugins."io.containerd.grpc.v1.cri"';
  const file = join(dir, 'containerd.toml');
  writeFileSync(
    file,
    [
      'version = 2',
      `root = ${JSON.stringify(p.root)}`,
      `state = ${JSON.stringify(p.state)}`,
      // Not the snapshotters this machine cannot have; not the stock opt directory.
      'disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]',
      '[grpc]',
      `  address = ${JSON.stringify(p.socket)}`,
      '[ttrpc]',
      `  address = ${JSON.stringify(`${p.socket}.ttrpc`)}`,
      '[debug]',
      '  address = ""',
      '[metrics]',
      '  address = ""',
      '[plugins."io.containerd.internal.v1.opt"]',
      `  path = ${JSON.stringify(join(dir, 'containerd', 'opt'))}`,
      `[${cri}]`,
      `  sandbox_image = ${JSON.stringify(pauseImage)}`,
      // Root here lacks CAP_SYS_RESOURCE: without it every sandbox fails to start.
      '  restrict_oom_score_adj = true',
      '  netns_mounts_under_state_dir = true',
      '  enable_selinux = false',
      '  stream_server_address = "127.0.0.1"',
      '  stream_server_port = "0"',
      `[${cri}.containerd]`,
      '  snapshotter = "overlayfs"',
      '  default_runtime_name = "runc"',
      `[${cri}.containerd.runtimes.runc]`,
      '  runtime_type = "io.containerd.runc.v2"',
      `[${cri}.containerd.runtimes.runc.options]`,
      '  SystemdCgroup = false',
      // runc's state with the rest (its default is /run/containerd/runc).
      `  Root = ${JSON.stringify(join(dir, 'runc'))}`,
      `[${cri}.cni]`,
      `  bin_dir = ${JSON.stringify(cniBinDir)}`,
      `  conf_dir = ${JSON.stringify(p.cniConfDir)}`,
      '',
    ].join('\n'),
  );
  return file;
}

/** A bridge network whose gateway is the node IP; IPAM state in `dir`, no masquerading (no iptables rules to undo). */
export function writeCniConfig(dir: string, p: ContainerdPaths): void {
  writeFileSync(
    join(p.cniConfDir, '10-internal-services.conflist'),
    JSON.stringify(
      {
        cniVersion: '0.4.0',
        name: 'internal-services-node',
        plugins: [
          {
            type: 'bridge',
            bridge: NODE_BRIDGE,
            isGateway: true,
            ipMasq: false,
            hairpinMode: false,
            ipam: { type: 'host-local', ranges: [[{ subnet: NODE_SUBNET, gateway: NODE_IP }]], dataDir: join(dir, 'cni', 'ipam') },
          },
        ],
      },
      null,
      2,
    ),
  );
}

export interface KubeletFiles {
  config: string;
  kubeconfig: string;
  rootDir: string;
}

/** The KubeletConfiguration (cgroupfs on cgroup v1, webhook authn/authz, no iptables, logs and plugins in `dir`). */
export function writeKubeletConfig(dir: string, pki: NodePki, p: ContainerdPaths, ports: { kubelet: number; healthz: number }, kubeconfig: string): KubeletFiles {
  const rootDir = join(dir, 'kubelet');
  mkdirSync(rootDir, { recursive: true });
  const config = join(dir, 'kubelet-config.yaml');
  writeFileSync(
    config,
    toYaml({
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      kind: 'KubeletConfiguration',
      address: NODE_IP,
      port: ports.kubelet,
      readOnlyPort: 0,
      healthzBindAddress: '127.0.0.1',
      healthzPort: ports.healthz,
      cgroupDriver: 'cgroupfs',
      failCgroupV1: false,
      failSwapOn: false,
      containerRuntimeEndpoint: `unix://${p.socket}`,
      authentication: { anonymous: { enabled: false }, webhook: { enabled: true }, x509: { clientCAFile: pki.ca.cert } },
      authorization: { mode: 'Webhook' },
      tlsCertFile: pki.kubeletServing.cert,
      tlsPrivateKeyFile: pki.kubeletServing.key,
      makeIPTablesUtilChains: false,
      podLogsDir: join(dir, 'pod-logs'),
      volumePluginDir: join(dir, 'volume-plugins'),
      // A test machine's disk: never collect images, never evict for disk.
      imageGCHighThresholdPercent: 100,
      imageGCLowThresholdPercent: 99,
      evictionHard: { 'memory.available': '1Mi', 'nodefs.available': '1%', 'nodefs.inodesFree': '1%', 'imagefs.available': '1%', 'imagefs.inodesFree': '1%' },
      serializeImagePulls: false,
      registerNode: true,
      // Status reports often, so that Ready and pod phases show quickly.
      nodeStatusUpdateFrequency: '4s',
      syncFrequency: '10s',
      kubeAPIQPS: 50,
      kubeAPIBurst: 100,
      resolvConf: '',
    }),
  );
  return { config, kubeconfig, rootDir };
}
