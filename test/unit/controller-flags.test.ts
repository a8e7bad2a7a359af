/** The controller process refuses unusable flags with one clear line and a non-zero exit. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../../src/api/crd-render.js';

/** The plain build and the bundle (npm run build makes both): each must behave the same. */
const CLIS = { plain: join(repoRoot(), 'dist', 'src', 'cli', 'main.js'), bundle: join(repoRoot(), 'dist', 'bundle', 'internal-services.mjs') };
let CLI = CLIS.plain;

function run(args: string[], env: Record<string, string> = {}) {
  const clean = { ...process.env };
  for (const k of ['KUBECONFIG', 'REMOTE_KUBECONFIG', 'POD_NAMESPACE', 'KUBERNETES_SERVICE_HOST']) delete clean[k];
  const r = spawnSync(process.execPath, [CLI, 'controller', ...args], { env: { ...clean, ...env }, encoding: 'utf8', timeout: 15_000 });
  return { code: r.status, lines: r.stderr.trim().split('\n').filter(Boolean) };
}

const dir = mkdtempSync(join(tmpdir(), 'flags-'));
const garbage = join(dir, 'garbage');
writeFileSync(garbage, 'this: [is not a kubeconfig');
const empty = join(dir, 'empty');
writeFileSync(empty, 'apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n');

for (const [build, path] of Object.entries(CLIS)) test(`unusable flags and unreadable kubeconfigs (${build} build): one line, non-zero exit`, () => {
  CLI = path;
  const cases: Array<{ args: string[]; env?: Record<string, string>; msg: RegExp }> = [
    { args: [], msg: /no remote cluster: give --remote-kubeconfig, kubeconfig Secrets with --remote-secrets-selector or --remote-secret, a directory of kubeconfigs with --remote-kubeconfig-dir, or a kcp provider workspace with --kcp-kubeconfig/ },
    { args: ['--remote-kubeconfig-dir', join(dir, 'missing')], msg: /--remote-kubeconfig-dir ".*missing" is not a directory that can be read \(mount the Secrets there\)/ },
    { args: ['--remote-kubeconfig-dir', garbage], msg: /--remote-kubeconfig-dir ".*garbage" is not a directory/ },
    { args: ['--remote-kubeconfig-dir', dir, '--remote-kubeconfig-dir-interval', 'often'], msg: /--remote-kubeconfig-dir-interval <duration>' argument 'often' is invalid/ },
    { args: ['--remote-kubeconfig', empty, '--remote-name', 'Prod_1'], msg: /--remote-name <name>' argument 'Prod_1' is invalid\. must be a DNS label/ },
    { args: ['--remote-secret', 'a,Bad_Secret'], msg: /--remote-secret <name\.\.\.>' argument 'a,Bad_Secret' is invalid\. "Bad_Secret" is not a Secret name/ },
    { args: ['--remote-kubeconfig', join(dir, 'missing'), '--kubeconfig', garbage, '--namespace', 'ns'], msg: /cannot read the remote kubeconfig .*missing/ },
    { args: ['--remote-kubeconfig', garbage, '--kubeconfig', garbage, '--namespace', 'ns'], msg: /cannot read the remote kubeconfig/ },
    { args: ['--remote-kubeconfig', empty, '--kubeconfig', empty, '--namespace', 'ns'], msg: /remote kubeconfig .* names no current context/ },
    { args: ['--remote-kubeconfig', empty, '--namespace', 'ns'], msg: /--kubeconfig \(or KUBECONFIG\) is required when not running in a pod/ },
    { args: ['--remote-kubeconfig', empty, '--kubeconfig', empty], msg: /--namespace \(or POD_NAMESPACE\) is required/ },
    { args: ['--remote-kubeconfig', empty, '--kubeconfig', empty, '--namespace', 'Bad_NS'], msg: /--namespace "Bad_NS" is not a valid namespace name/ },
    { args: ['--remote-kubeconfig', empty, '--workers', 'many'], msg: /--workers <n>' argument 'many' is invalid/ },
    { args: ['--remote-kubeconfig', empty, '--resync-period', '10'], msg: /--resync-period <duration>' argument '10' is invalid/ },
    { args: ['--remote-kubeconfig', empty, '--kubeconfig', empty, '--namespace', 'ns', '--metrics-bind-address', 'nowhere'], msg: /--metrics-bind-address "nowhere" is not an address/ },
    { args: ['--remote-kubeconfig', empty, '--kubeconfig', empty, '--namespace', 'ns', '--leader-elect', '--renew-deadline', '20s'], msg: /--retry-period < --renew-deadline < --lease-duration/ },
    { args: ['--remote-kubeconfig', empty, '--bogus'], msg: /unknown option '--bogus'/ },
    { args: ['--remote-kubeconfig', empty, '--tekton-namespace', 'Tekton_Pipelines'], msg: /--tekton-namespace <name>' argument 'Tekton_Pipelines' is invalid\. must be a namespace name/ },
    { args: ['--remote-kubeconfig', empty], env: { TEKTON_NAMESPACE: 'no/such' }, msg: /--tekton-namespace <name>' value 'no\/such' from env 'TEKTON_NAMESPACE' is invalid\. must be a namespace name/ },
    { args: ['--remote-kubeconfig', empty, '--tekton-chains-namespace', 'Tekton_Chains'], msg: /--tekton-chains-namespace <name>' argument 'Tekton_Chains' is invalid\. must be a namespace name/ },
    { args: ['--remote-kubeconfig', empty], env: { TEKTON_RESULTS_NAMESPACE: 'a.b' }, msg: /--tekton-results-namespace <name>' value 'a\.b' from env 'TEKTON_RESULTS_NAMESPACE' is invalid\. must be a namespace name/ },
    { args: ['--remote-kubeconfig', empty, '--tekton-version-interval', '10'], msg: /--tekton-version-interval <duration>' argument '10' is invalid/ },
    { args: ['--remote-kubeconfig', empty, '--source-check-max-size', '10'], msg: /--source-check-max-size <bytes>' argument '10' is invalid\. "10" is below 1Mi/ },
    { args: ['--remote-kubeconfig', empty, '--source-check-max-size', 'lots'], msg: /--source-check-max-size <bytes>' argument 'lots' is invalid\. "lots" is not a size \(e\.g\. 512Mi, 1Gi, 1048576\)/ },
    { args: ['--remote-kubeconfig', empty, '--source-check-timeout', 'soon'], msg: /--source-check-timeout <duration>' argument 'soon' is invalid/ },
    { args: ['--remote-kubeconfig', empty, '--source-check-cache-size', 'lots'], msg: /--source-check-cache-size <bytes>' argument 'lots' is invalid\. "lots" is not a size/ },
    { args: ['--remote-kubeconfig', empty, '--kubeconfig', empty, '--namespace', 'ns', '--source-check-cache-size', '256Mi'], msg: /--source-check-cache-size \(268435456 bytes\) must be at least --source-check-max-size \(536870912 bytes\): the cache must hold the largest clone it keeps/ },
    { args: ['--remote-kubeconfig', empty, '--kubeconfig', empty, '--namespace', 'ns'], env: { SOURCE_CHECK_CACHE_SIZE: '2Gi', SOURCE_CHECK_MAX_SIZE: '3Gi' }, msg: /--source-check-cache-size \(2147483648 bytes\) must be at least --source-check-max-size \(3221225472 bytes\)/ },
    { args: ['--remote-kubeconfig', empty, '--kubeconfig', empty, '--namespace', 'ns', '--request-kind-module', join(dir, 'no-such-kind.mjs')], msg: /--request-kind-module ".*no-such-kind\.mjs" cannot be loaded/ },
    { args: ['--kcp-kubeconfig', join(dir, 'missing'), '--kubeconfig', empty, '--namespace', 'ns'], msg: /cannot read the kcp kubeconfig .*missing/ },
    { args: ['--kcp-kubeconfig', empty, '--kubeconfig', empty, '--namespace', 'ns'], msg: /the kcp kubeconfig .* names no current context/ },
    { args: [], env: { REMOTE_KUBECONFIG: join(dir, 'nope'), KUBECONFIG: empty, POD_NAMESPACE: 'ns' }, msg: /cannot read the remote kubeconfig .*nope/ },
  ];
  for (const c of cases) {
    const r = run(c.args, c.env);
    assert.notEqual(r.code, 0, c.args.join(' '));
    assert.equal(r.lines.length, 1, `one line for ${c.args.join(' ')}: ${r.lines.join(' | ')}`);
    assert.match(r.lines[0]!, c.msg, c.args.join(' '));
  }
});

for (const [build, path] of Object.entries(CLIS)) test(`the Tekton flags are documented in --help, with their environment variables and defaults (${build} build)`, () => {
  const r = spawnSync(process.execPath, [path, 'controller', '--help'], { encoding: 'utf8', timeout: 15_000 });
  assert.equal(r.status, 0, r.stderr);
  const help = r.stdout.replace(/\s+/g, ' ');
  assert.match(help, /--tekton-namespace <name> namespace of Tekton Pipelines on the internal cluster, whose ConfigMap pipelines-info says its version .*\(default: "tekton-pipelines", env: TEKTON_NAMESPACE\)/);
  assert.match(help, /--git-cache-dir <path> where the partial clones that commits asked for by SHA are checked in live .*\(env: GIT_CACHE_DIR\)/);
  assert.match(help, /--source-check-timeout <duration> deadline of one git command .*\(default: 60s, env: SOURCE_CHECK_TIMEOUT\)/);
  assert.match(help, /--source-check-max-size <bytes> largest clone kept to check commits in .*\(default: 512Mi, env: SOURCE_CHECK_MAX_SIZE\)/);
  assert.match(help, /--source-check-cache-size <bytes> most all the clones kept to check commits in may take together, at least --source-check-max-size .*least recently used clones not in use are removed.*\(default: 1Gi, env: SOURCE_CHECK_CACHE_SIZE\)/);
  assert.match(help, /--tekton-results-namespace <name> namespace of Tekton Results on the internal cluster, whose ConfigMap tekton-results-info says its version .*default: --tekton-namespace, where its release installs it \(env: TEKTON_RESULTS_NAMESPACE\)/);
  assert.match(help, /--tekton-chains-namespace <name> namespace of Tekton Chains on the internal cluster, whose ConfigMap chains-info says its version .*\(default: "tekton-chains", env: TEKTON_CHAINS_NAMESPACE\)/);
  assert.match(help, /--tekton-resolvers-namespace <name> namespace of Tekton's resolvers on the internal cluster, whose ConfigMap resolvers-feature-flags says which resolvers run .*default: --tekton-namespace with -resolvers appended \(tekton-pipelines-resolvers\), as Tekton's release installs them \(env: TEKTON_RESOLVERS_NAMESPACE\)/);
  assert.match(help, /--tekton-version-interval <duration> how often the versions of Tekton Pipelines, Results and Chains, and the Tekton settings \(config-defaults, resolvers-feature-flags\), are read again \(default: 60s, env: TEKTON_VERSION_INTERVAL\)/);
  assert.match(help, /--refuse-resolvers-on-advisory refuse requests with resolver references while the Tekton Pipelines version has a known advisory in its resolvers, or cannot be told \(default: false, env: REFUSE_RESOLVERS_ON_ADVISORY\)/);
});
