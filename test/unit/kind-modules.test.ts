/** Request kinds written as code, served from the command line (src/cli/kind-modules.ts, --request-kind-module). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadKindModules } from '../../src/cli/kind-modules.js';

const KIND = (kind: string, plural: string) => `{
  kind: ${JSON.stringify(kind)},
  resource: { group: 'signing.example.com', version: 'v1alpha1', plural: ${JSON.stringify(plural)} },
  builtIn: false,
  toRequest: (obj) => obj,
  checkShape: () => undefined,
  statusBody: (req, status) => ({ ...req, status }),
}`;

test('--request-kind-module: a module\'s default export (a kind, or a list) is served; anything else is a configuration error naming the module', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kind-modules-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, text: string) => {
    const p = join(dir, name);
    writeFileSync(p, text);
    return p;
  };
  const one = file('signing.mjs', `export default ${KIND('SigningRequest', 'signingrequests')};\n`);
  const two = file('two.mjs', `export default [${KIND('TicketRequest', 'ticketrequests')}, ${KIND('ScanRequest', 'scanrequests')}];\n`);
  const kinds = await loadKindModules([one, two]);
  assert.deepEqual(kinds.map((k) => k.kind), ['SigningRequest', 'TicketRequest', 'ScanRequest']);
  assert.equal(kinds[0]!.checkShape({} as never), undefined);

  const refused: Array<[string, RegExp]> = [
    [join(dir, 'missing.mjs'), /--request-kind-module ".*missing\.mjs" cannot be loaded/],
    [file('syntax.mjs', 'export default {'), /cannot be loaded/],
    [file('none.mjs', 'export const x = 1;\n'), /its default export is not a request kind: it is not an object/],
    [file('builtin.mjs', `export default { ...${KIND('X', 'xs')}, builtIn: true };\n`), /builtIn must be false/],
    [file('nofn.mjs', `export default { ...${KIND('Y', 'ys')}, statusBody: 1 };\n`), /it has no statusBody\(\) function/],
    [file('empty.mjs', 'export default [];\n'), /exports no request kind/],
    [file('clash.mjs', `export default ${KIND('InternalRequest', 'others')};\n`), /two request kinds share the kind InternalRequest/],
  ];
  for (const [p, why] of refused) {
    await assert.rejects(loadKindModules([p]), (e: Error & { code?: string }) => {
      assert.equal(e.code, 'CONFIG_FLAG', p);
      assert.match(e.message, why, p);
      return true;
    });
  }
});
