// Bundles the built CLI (dist/src/cli/main.js) into one ESM file with
// esbuild: only the code that is used is loaded at run time, which is most of
// the memory of a bare controller process (@kubernetes/client-node's
// generated API modules). Run by `npm run build`, after tsc.
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { readFileSync } from 'node:fs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const result = await build({
  // The CLI (controller, local, request commands) and the kubectl plugin.
  entryPoints: {
    'internal-services': join(root, 'dist/src/cli/main.js'),
    'kubectl-internalrequest': join(root, 'dist/src/cli/kubectl-internalrequest.js'),
  },
  outdir: join(root, 'dist/bundle'),
  outExtension: { '.js': '.mjs' },
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20.18',
  sourcemap: true,
  // Whitespace and syntax only: V8 keeps a script's whole source in memory
  // (6.7 MB unminified, 3.3 MB like this), while identifiers stay as written,
  // so class names still read in heap snapshots and errors.
  minifyWhitespace: true,
  minifySyntax: true,
  metafile: true,
  logLevel: 'warning',
  // node-fetch's URL parser (tr46, whatwg-url) requires Node's built-in
  // punycode, which Node.js 22 and later deprecate with a warning on stderr
  // at every start (DEP0040): the bundle takes the same code from the npm
  // package instead.
  alias: { punycode: './node_modules/punycode/punycode.js' },
  // Optional native add-ons of ws: loaded in try/catch when present.
  external: ['bufferutil', 'utf-8-validate'],
  // CommonJS dependencies call require(); an ES module has none of its own.
  banner: { js: "import { createRequire as __isCreateRequire } from 'node:module'; const require = __isCreateRequire(import.meta.url);" },
});
// V8 keeps a script's source for the process's life, one byte a character
// when every character is ASCII and two bytes each when any one is not
// (measured on Node.js 26: 8 MB more at ready). esbuild escapes non-ASCII in
// strings but not in a regular expression's literal: write \u00b5, not µ.
for (const file of Object.keys(result.metafile.outputs).filter((f) => f.endsWith('.mjs'))) {
  const text = readFileSync(join(root, file), 'utf8');
  const i = text.search(/[^\x00-\x7f]/);
  if (i >= 0) {
    process.stderr.write(`bundle: ${file} has a non-ASCII character at ${i} (${JSON.stringify(text.slice(Math.max(0, i - 40), i + 10))}): its whole source would be kept as two bytes a character; escape it in the source (\\uXXXX)\n`);
    process.exit(1);
  }
}
const bytes = Object.values(result.metafile.outputs).reduce((a, o) => a + o.bytes, 0);
process.stderr.write(`bundle: dist/bundle/internal-services.mjs, kubectl-internalrequest.mjs (${(bytes / 1024 / 1024).toFixed(1)} MB with source maps)\n`);
