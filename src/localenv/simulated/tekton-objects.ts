/**
 * The tekton.dev/v1 objects the simulated executor reads and writes
 * (PipelineRuns, Pipelines, TaskRuns), kept loose on purpose, and the
 * Succeeded condition that tells whether a run has finished.
 */
import type { KubernetesObject } from '@kubernetes/client-node';

export const GROUP = 'tekton.dev';
export const VERSION = 'v1';
export const API_VERSION = `${GROUP}/${VERSION}`;

/** A tekton.dev/v1 object as stored (spec/status kept loose on purpose). */
export interface TektonObject extends KubernetesObject {
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
}
export type PipelineRunObject = TektonObject;
export type PipelineObject = TektonObject;

/** A Tekton result value: string, array of strings, or object of strings. */
export type ResultValue = string | string[] | Record<string, string>;
export type Results = Record<string, ResultValue>;

export interface FailOptions {
  /** PipelineRun condition reason (default "Failed"). */
  reason?: string;
  /** PipelineRun condition message (default Tekton's "Tasks Completed: …" summary). */
  message?: string;
  /** Pipeline task names whose TaskRuns failed. */
  failedTasks: string[];
  /** Pipeline task names whose TaskRuns succeeded before the failure. */
  succeededTasks?: string[];
}

export type SimulatedOutcome = { succeeded: true; results?: Results } | ({ succeeded: false } & Partial<FailOptions>);

export interface Condition {
  type: 'Succeeded';
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime: string;
}

/** An entry of PipelineRun status.childReferences. */
export interface ChildReference {
  apiVersion: string;
  kind: 'TaskRun';
  name: string;
  pipelineTaskName: string;
}

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function succeededCondition(obj: TektonObject): Partial<Condition> | undefined {
  const conds = obj.status?.['conditions'];
  if (!Array.isArray(conds)) return undefined;
  return (conds as unknown[]).find(
    (c): c is Partial<Condition> => isRecord(c) && c['type'] === 'Succeeded',
  );
}

/** True once the run has a final Succeeded condition (True or False). */
export function isTerminal(obj: TektonObject): boolean {
  const s = succeededCondition(obj)?.status;
  return s === 'True' || s === 'False';
}

/** Objects the caller already holds, so the executor need not read them again. */
export interface Known {
  pr?: PipelineRunObject;
  /** The run's Pipeline (undefined: none); absent key: look it up. */
  pipeline?: PipelineObject | undefined;
}
