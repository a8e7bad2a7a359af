/**
 * The progress-message callback every part of the local environment takes
 * (real processes and simulated ones alike). On its own so that
 * simulated/ needs nothing from real/.
 */
export type LogFn = (msg: string) => void;
