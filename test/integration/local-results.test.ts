/**
 * `internal-services local --results` (what `npm start -- --results` runs):
 * real Tekton Results with PostgreSQL archive a run, it is pruned, and the
 * requester reads its logs back from the archive; exits 0.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runLocalTour } from './local-tour.js';

test('internal-services local --results: a run archived by real Tekton Results, pruned, and its logs read back by the requester; exits 0', { timeout: 300_000 }, async () => {
  const { code, stdout, output } = await runLocalTour(['--results'], 270_000);
  assert.equal(code, 0, output);
  assert.match(stdout, /PipelineRun internal-services\/ir-[0-9a-f-]+ pruned after Tekton Results stored it; the request names record internal-services\/results\/[0-9a-f-]+\/records\/[0-9a-f-]+/, output);
  assert.match(stdout, /source: TektonResults \(pods SIMULATED\)/, output);
  assert.match(stdout, /\[sign : sign\] \[simulated\] result signature: signature:\{"image":"quay\.io\/example\/app@sha256:/, output);
  assert.match(stdout, /The run was archived, pruned, and its logs came back from Tekton Results\./, output);
});
