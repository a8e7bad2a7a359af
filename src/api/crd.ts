/** Builds the CustomResourceDefinitions from the schemas in types.ts. */
import {
  INTERNAL_REQUEST,
  INTERNAL_SERVICES_CONFIG,
  INTERNAL_REQUEST_APPROVAL,
  approvalSpecSchema,
  approvalStatusSchema,
  internalRequestSpecSchema,
  internalRequestStatusSchema,
  internalServicesConfigSpecSchema,
  COMPLETION_TIME_FIELD,
  VERSION,
} from './types.js';
import type { Schema } from './schema.js';
import { REQUEST_DEFINITION, requestDefinitionSpecSchema, requestDefinitionStatusSchema } from './request-definition.js';

interface Names {
  group: string;
  kind: string;
  plural: string;
  singular: string;
  shortNames: readonly string[];
}

function crd(names: Names, description: string, spec: Schema, status: Schema | undefined, columns: object[], specRequired: boolean, selectable: readonly object[] = []) {
  const properties: Record<string, unknown> = {
    apiVersion: { type: 'string' },
    kind: { type: 'string' },
    metadata: { type: 'object' },
    spec,
  };
  if (status) properties.status = status;
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${names.plural}.${names.group}` },
    spec: {
      group: names.group,
      names: {
        kind: names.kind,
        listKind: `${names.kind}List`,
        plural: names.plural,
        singular: names.singular,
        shortNames: [...names.shortNames],
      },
      scope: 'Namespaced',
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          ...(status ? { subresources: { status: {} } } : {}),
          additionalPrinterColumns: columns,
          ...(selectable.length ? { selectableFields: [...selectable] } : {}),
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description,
              ...(specRequired ? { required: ['spec'] } : {}),
              properties,
            },
          },
        },
      ],
    },
  };
}

const succeeded = (field: string) => `.status.conditions[?(@.type=="Succeeded")].${field}`;
const progressing = (field: string) => `.status.conditions[?(@.type=="Progressing")].${field}`;

export const internalRequestCrd = crd(
  INTERNAL_REQUEST,
  'A request, made on the remote cluster, to run a Pipeline of the internal cluster.',
  internalRequestSpecSchema,
  internalRequestStatusSchema,
  [
    // What was requested: a Pipeline by name (either shape), or a resolver and its path.
    { name: 'Request', type: 'string', jsonPath: '.spec.request' },
    { name: 'Pipeline', type: 'string', jsonPath: '.spec.pipeline.pipelineRef.name' },
    { name: 'Resolver', type: 'string', jsonPath: '.spec.pipeline.pipelineRef.resolver' },
    { name: 'Path', type: 'string', jsonPath: '.spec.pipeline.pipelineRef.params[?(@.name=="pathInRepo")].value', priority: 1 },
    { name: 'Succeeded', type: 'string', jsonPath: succeeded('status') },
    { name: 'Reason', type: 'string', jsonPath: succeeded('reason') },
    // Where an unfinished request stands (WaitingForConfig, Resolving, AwaitingApproval, Queued, Following, Running); the outcome once finished.
    { name: 'Phase', type: 'string', jsonPath: progressing('reason') },
    { name: 'PipelineRun', type: 'string', jsonPath: '.status.pipelineRun', priority: 1 },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  ],
  true,
  [COMPLETION_TIME_FIELD],
);

export const internalServicesConfigCrd = crd(
  INTERNAL_SERVICES_CONFIG,
  "Configuration of the Internal Services controller; the one named 'config' in the controller's namespace is used.",
  internalServicesConfigSpecSchema,
  undefined,
  [
    { name: 'Debug', type: 'boolean', jsonPath: '.spec.debug' },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  ],
  false,
);

export const internalRequestApprovalCrd = crd(
  INTERNAL_REQUEST_APPROVAL,
  'A request waiting for approval on the internal cluster; approvers write the decision into its status.',
  approvalSpecSchema,
  approvalStatusSchema,
  [
    { name: 'Namespace', type: 'string', jsonPath: '.spec.request.namespace' },
    { name: 'Request', type: 'string', jsonPath: '.spec.request.name' },
    { name: 'Workspace', type: 'string', jsonPath: '.spec.request.workspace', priority: 1 },
    { name: 'Rule', type: 'string', jsonPath: '.spec.rule' },
    { name: 'Pipeline', type: 'string', jsonPath: '.spec.pipeline' },
    { name: 'Decision', type: 'string', jsonPath: '.status.decision.result' },
    { name: 'By', type: 'string', jsonPath: '.status.decision.by' },
    { name: 'Expires', type: 'date', jsonPath: '.spec.expiresAt', priority: 1 },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  ],
  true,
);

export const requestDefinitionCrd = crd(
  REQUEST_DEFINITION,
  "A service's own request kind, served by the controller beside InternalRequest: its names on the remote side, the Pipeline it runs, and how its spec fields map to the Pipeline's params. Lives in the controller's namespace on the internal cluster.",
  requestDefinitionSpecSchema as unknown as Schema,
  requestDefinitionStatusSchema,
  [
    { name: 'Kind', type: 'string', jsonPath: '.spec.kind' },
    { name: 'Group', type: 'string', jsonPath: '.spec.group' },
    { name: 'Pipeline', type: 'string', jsonPath: '.spec.request' },
    { name: 'Resolver', type: 'string', jsonPath: '.spec.pipelineRef.resolver' },
    { name: 'Served', type: 'string', jsonPath: '.status.conditions[?(@.type=="Served")].status' },
    { name: 'Reason', type: 'string', jsonPath: '.status.conditions[?(@.type=="Served")].reason' },
    { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' },
  ],
  true,
);

/** File name under config/crd/bases → CRD object, in the kubebuilder naming style. */
export const crdFiles: Record<string, object> = {
  [`${INTERNAL_REQUEST.group}_${INTERNAL_REQUEST.plural}.yaml`]: internalRequestCrd,
  [`${INTERNAL_SERVICES_CONFIG.group}_${INTERNAL_SERVICES_CONFIG.plural}.yaml`]: internalServicesConfigCrd,
  [`${INTERNAL_REQUEST_APPROVAL.group}_${INTERNAL_REQUEST_APPROVAL.plural}.yaml`]: internalRequestApprovalCrd,
  [`${REQUEST_DEFINITION.group}_${REQUEST_DEFINITION.plural}.yaml`]: requestDefinitionCrd,
};
