/**
 * Tekton Chains next to the controller (InternalServicesConfig spec.chains):
 * what happens between a request's outcome and the removal of its
 * PipelineRun. Pure, like decide(), which calls it for a finished request
 * whose PipelineRun is done.
 *
 * Chains stores its signature as annotations on the run itself (storage
 * "tekton"), so the run must stay until Chains has signed it; the controller
 * then relays what was signed into the request's status.attestation (one
 * status write, after the outcome: the requester's contract,
 * conditions[0], never waits for it), and only then removes the run. The
 * wait is bounded by signedTimeout from the run's completion: after it the
 * request says that no attestation came, and the run is removed unsigned.
 */
import { formatDuration } from '../util/duration.js';
import { chainsStateOf, signedAttestation, type Attestation } from '../tekton/chains.js';
import type { InternalRequest } from '../api/types.js';
import type { PipelineRun } from '../tekton/tekton-types.js';
import type { EffectiveConfig } from './config.js';

/** Why a run was removed without a signature (a metric label). */
export type UnsignedReason = 'timeout' | 'failed' | 'no-signature';

export interface ChainsStep {
  /** Relay the attestation (or the lack of one) into the request's status. */
  relay?: { attestation: Attestation; event: { type: 'Normal' | 'Warning'; reason: string; message: string; success?: true } };
  /** Look again after this long; the run stays until then. */
  requeueMs?: number;
  /** The run may be removed (after the relay). */
  removable: boolean;
  /** Removed without a signature, and why (for the log and the metric). */
  unsigned?: { reason: UnsignedReason; why: string };
}

/**
 * What Chains' work on a finished request's done PipelineRun asks for;
 * undefined when Chains is not configured (nothing changes then).
 */
export function chainsStep(config: Pick<EffectiveConfig, 'chains'>, req: InternalRequest, pr: PipelineRun, now: Date): ChainsStep | undefined {
  if (!config.chains.enabled) return undefined;
  const ref = `${pr.metadata.namespace ?? ''}/${pr.metadata.name ?? ''}`;
  // Relayed already (the record of a finished request keeps it): only the removal is left.
  if (req.status?.attestation) return { removable: true };
  const s = chainsStateOf(pr);
  switch (s.state) {
    case 'signed': {
      const attestation = signedAttestation(pr, s);
      return {
        relay: { attestation, event: { type: 'Normal', reason: 'Attested', message: `Tekton Chains signed PipelineRun ${ref}: payload ${attestation.digest}, key ${attestation.keyId ?? 'unnamed'}`, success: true } },
        removable: true,
      };
    }
    case 'failed': {
      const why = `Tekton Chains gave up signing PipelineRun ${ref} (chains.tekton.dev/signed: failed${s.retries ? ` after ${Number(s.retries) + 1} attempts` : ''}); there is no attestation`;
      return { relay: unsigned('Failed', why), removable: true, unsigned: { reason: 'failed', why } };
    }
    case 'unsigned': {
      const why = `PipelineRun ${ref} has no attestation: ${s.why}`;
      return { relay: unsigned('Unsigned', why), removable: true, unsigned: { reason: 'no-signature', why } };
    }
    case 'pending': {
      const done = Date.parse(pr.status?.completionTime ?? '') || now.getTime();
      const left = done + config.chains.signedTimeoutMs - now.getTime();
      if (left > 0) return { requeueMs: Math.min(left, 30_000) + 100, removable: false };
      const why = `Tekton Chains had not signed PipelineRun ${ref} within ${formatDuration(config.chains.signedTimeoutMs)} of its completion (spec.chains.signedTimeout of the InternalServicesConfig): no attestation is relayed`;
      return { relay: unsigned('Unsigned', why), removable: true, unsigned: { reason: 'timeout', why } };
    }
  }
}

function unsigned(state: 'Unsigned' | 'Failed', why: string): NonNullable<ChainsStep['relay']> {
  return { attestation: { state, message: why }, event: { type: 'Warning', reason: state === 'Failed' ? 'AttestationFailed' : 'Unattested', message: why } };
}
