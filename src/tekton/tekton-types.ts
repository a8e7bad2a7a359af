/** The parts of Tekton's tekton.dev/v1 API this project reads and writes. */
import type { Condition, ObjectMeta } from '../api/types.js';

export const TEKTON_GROUP = 'tekton.dev';
export const TEKTON_VERSION = 'v1';
export const PIPELINE = { group: TEKTON_GROUP, version: TEKTON_VERSION, plural: 'pipelines' } as const;
export const PIPELINERUN = { group: TEKTON_GROUP, version: TEKTON_VERSION, plural: 'pipelineruns' } as const;
export const TASK = { group: TEKTON_GROUP, version: TEKTON_VERSION, plural: 'tasks' } as const;
export const TASKRUN = { group: TEKTON_GROUP, version: TEKTON_VERSION, plural: 'taskruns' } as const;
export const STEPACTION = { group: TEKTON_GROUP, version: 'v1beta1', plural: 'stepactions' } as const;

export type ParamType = 'string' | 'array' | 'object';
export type ParamValue = string | string[] | Record<string, string>;

export interface ParamSpec {
  name: string;
  type?: ParamType;
  default?: ParamValue;
  description?: string;
}

export interface Pipeline {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: {
    params?: ParamSpec[];
    workspaces?: Array<{ name: string; optional?: boolean }>;
    results?: Array<{ name: string; value?: unknown; description?: string }>;
    tasks?: Array<{ name: string }>;
  };
}

export interface PipelineRunResult {
  name: string;
  value: unknown;
}

export interface ChildReference {
  apiVersion?: string;
  kind?: string;
  name: string;
  pipelineTaskName?: string;
}

export interface PipelineRun {
  apiVersion: 'tekton.dev/v1';
  kind: 'PipelineRun';
  metadata: ObjectMeta;
  spec: {
    pipelineRef?: { name: string };
    pipelineSpec?: Record<string, unknown>;
    params?: Array<{ name: string; value: ParamValue }>;
    timeouts?: { pipeline?: string; tasks?: string; finally?: string };
    taskRunTemplate?: { serviceAccountName?: string };
    workspaces?: Array<Record<string, unknown>>;
    status?: string;
  };
  status?: {
    conditions?: Array<Partial<Condition> & { type: string; status: string }>;
    startTime?: string;
    completionTime?: string;
    results?: PipelineRunResult[];
    childReferences?: ChildReference[];
  };
}

/** A Task, read only for the refs its steps make. */
export interface Task {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  spec?: Record<string, unknown>;
}

export interface TaskRun {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  status?: {
    conditions?: Array<{ type: string; status: string; reason?: string; message?: string }>;
    podName?: string;
    steps?: Array<{ name: string; container?: string; terminated?: { exitCode?: number; reason?: string } }>;
    /** The Task as it ran (v1 keeps the resolved spec here): its declared results. */
    taskSpec?: { results?: Array<{ name: string }> };
    results?: Array<{ name: string }>;
  };
}
