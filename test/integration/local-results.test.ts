/**
 * `internal-services local --results` (what `npm start -- --results` runs):
 * real Tekton Results with PostgreSQL archive a run, it is pruned, and the
 * requester reads its logs back from the archive; exits 0.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { realNodeUnavailable } from '../../src/localenv/index.js';
import { runLocalTour } from './local-tour.js';

const unavailable = realNodeUnavailable();

test(`internal-services local --results: a run archived by real Tekton Results, pruned, and its logs read back by the requester; exits 0 (${unavailable ? 'pods SIMULATED' : 'pods on the real node'})`, { timeout: 300_000 }, async () => {
  const { code, stdout, output } = await runLocalTour(['--results'], 270_000);
  assert.equal(code, 0, output);
  assert.match(stdout, /PipelineRun internal-services\/ir-[0-9a-f-]+ pruned after Tekton Results stored it; the request names record internal-services\/results\/[0-9a-f-]+\/records\/[0-9a-f-]+/, output);
  if (unavailable) {
    assert.ok(stdout.includes(`source: TektonResults (pods SIMULATED (no real node: ${unavailable}))`), output);
    assert.match(stdout, /\[sign : sign\] \[simulated\] result signature: signature:\{"image":"quay\.io\/example\/app@sha256:/, output);
  } else {
    // The step's own output, written by its script on the real node, archived by Results after the run was pruned.
    assert.match(stdout, /source: TektonResults \(pods on the real node\)/, output);
    assert.match(stdout, /signing quay\.io\/example\/app@sha256:4b0cbd1c3d2f1e0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a$/m, output);
  }
  assert.match(stdout, /The run was archived, pruned, and its logs came back from Tekton Results\./, output);
});
