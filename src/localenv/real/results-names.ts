/** Where Tekton Results lives in the harness, and who its processes are (identities.ts makes their tokens). */
export const RESULTS_NAMESPACE = 'tekton-results';
export const RESULTS_IDENTITIES = {
  api: `system:serviceaccount:${RESULTS_NAMESPACE}:api`,
  watcher: `system:serviceaccount:${RESULTS_NAMESPACE}:watcher`,
} as const;
