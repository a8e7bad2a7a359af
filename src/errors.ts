/**
 * One registry of the project's error codes (<AREA>_<PROBLEM>). Every error a
 * user or requester can see carries one of these codes, so logs, docs
 * (docs/errors.md) and tests refer to the same names.
 */
export const ErrorCodes = {
  CONFIG_FLAG: 'A command-line flag or its environment variable is missing or invalid.',
  CONFIG_KUBECONFIG: 'A kubeconfig file cannot be read or names no cluster.',
  REQUEST_NAMESPACE_NOT_ALLOWED: "The request's namespace is not on the allowList of the InternalServicesConfig.",
  REQUEST_PIPELINE_NOT_ALLOWED: 'A per-namespace rule names the namespace, but none grants the requested Pipeline (or remote Pipelines).',
  REQUEST_SERVICE_ACCOUNT_NOT_FOUND: 'The service account the request names is allowed, but no ServiceAccount of that name exists in the controller\'s namespace on the internal cluster.',
  REQUEST_GRANT_EXPIRED: 'The rule that granted the requested Pipeline (or remote Pipelines) was a temporary grant (expires) and its time is over.',
  REQUEST_PIPELINE_NOT_FOUND: "No Pipeline of the requested name exists in the controller's namespace.",
  REQUEST_PARAMS_INVALID: "The request's params do not match the Pipeline's declared params.",
  REQUEST_SERVICE_ACCOUNT_NOT_ALLOWED: 'The request names a service account that is not in allowedServiceAccounts.',
  REQUEST_SOURCE_NOT_ALLOWED: 'The request asks for a Pipeline from a source (a remote resolver) that no source policy allows.',
  REQUEST_LIMIT_EXCEEDED: 'The request exceeds a limit of the InternalServicesConfig: a param value or all params too large, a timeout too long, no timeout (0s) where that is not allowed, or tasks + finally longer than pipeline.',
  REQUEST_IDEMPOTENCY_CONFLICT: 'The idempotency key is already used by an earlier running or succeeded request of the namespace with a different spec.',
  REQUEST_NOT_APPROVED: 'A rule requires approval, and an approver denied the request, or no decision came before approvalTimeout.',
  REQUEST_RESOLUTION_FAILED: 'The Pipeline, or a Task or StepAction it references, could not be resolved (or not within sources.resolutionTimeout), or is not a Tekton v1 object of the expected kind.',
  REQUEST_SIGNATURE_INVALID: 'A source rule requires signatures (Tekton Trusted Resources), and a resolved Pipeline, Task or StepAction is unsigned, or its tekton.dev/signature does not verify against the keys of the rule (changed after signing, or another key).',
  REQUEST_NOT_CLOSED: 'The PipelineRun built for the request would ask Tekton to resolve something the controller did not check and pin (the closed-world check just before the create failed); nothing was created.',
  REQUEST_INVALID: 'The request is malformed, or the internal cluster refused the PipelineRun built from it.',
  PIPELINERUN_FAILED: 'The PipelineRun ended unsuccessfully.',
  PIPELINERUN_MISSING: 'The PipelineRun of a running request disappeared before it finished.',
  CLUSTER_UNREACHABLE: 'A cluster cannot be reached; the controller retries with backoff.',
  CLI_PARAM_INVALID: 'Requester CLI: a -p key=value (or KEY=VALUE argument) is malformed or repeated, or its @file cannot be read.',
  CLI_LABEL_INVALID: 'Requester CLI: a -l label or label selector is malformed.',
  CLI_PIPELINE_NAME: 'Requester CLI: no Pipeline name was given, or it is not a valid name.',
  CLI_DURATION_INVALID: "Requester CLI: a duration flag is not a Go duration, or the timeouts break Tekton's rule tasks + finally <= pipeline.",
  CLI_OUTPUT_INVALID: 'Requester CLI: --output is not json, yaml or value=KEY, or KEY is not among the results.',
  CLI_FIELD_INVALID: 'Requester CLI: a --field NAME=VALUE of a typed kind is malformed or repeated, or --spec-file cannot be read or is not an object.',
  CLI_KIND_UNKNOWN: 'Requester CLI: --kind names no request kind of the cluster, several, or a resource that is not a request kind.',
  CLI_USAGE: 'Requester CLI: flags or arguments that do not go together.',
  CLI_KUBECONFIG: 'Requester CLI: no kubeconfig, an unreadable one, or an unknown --context.',
  CLI_CLUSTER_ACCESS: 'Requester CLI: the cluster cannot be reached, refuses the credentials or the action, or lacks the InternalRequest API.',
  CLI_REQUEST_REFUSED: 'Requester CLI: the API server refused to create the request (name taken, invalid name or spec).',
  CLI_REQUEST_NOT_FOUND: 'Requester CLI: no request (of the kind --kind names) of that name, or none matching the selector.',
  CLI_REQUEST_GONE: 'Requester CLI: a request was deleted while the command waited for it.',
  CLI_WAIT_TIMEOUT: 'Requester CLI: a request did not finish within --timeout (it keeps running).',
  CLI_KEY_INVALID: 'Requester CLI (verify): the --key file cannot be read or holds no PEM public key.',
  CLI_ATTESTATION_MISSING: 'Requester CLI (verify): the request has no attestation to check: not finished yet, not relayed yet, Tekton Chains not configured, did not sign, or the envelope was too large to relay.',
  CLI_ATTESTATION_INVALID: 'Requester CLI (verify): the attestation does not verify: a signature invalid for the key (tampered, or the wrong key), a digest or provenance that does not match the request.',
} as const;

export type ErrorCode = keyof typeof ErrorCodes;

export class InternalServicesError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'InternalServicesError';
  }
}

/** Bad flags, unreadable kubeconfig: the process prints one line and exits non-zero. */
export class ConfigError extends InternalServicesError {
  constructor(code: 'CONFIG_FLAG' | 'CONFIG_KUBECONFIG', message: string) {
    super(code, message);
    this.name = 'ConfigError';
  }
}
