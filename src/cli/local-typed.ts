/**
 * The local run's typed kind: the sample SigningRequest
 * (config/samples/kinds/signing) beside the InternalRequest samples. Its
 * Pipeline and RequestDefinition go to the internal cluster, the CRD and
 * RBAC that `kinds render` makes of them to the remote one; the requester is
 * granted the kind in the allowed namespace, creates one valid
 * SigningRequest, and sees the apiserver refuse a malformed one. Its
 * Pipeline's step is made ready for the run's pods by the caller
 * (local-pods.ts).
 */
import { CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import { sampleKind } from '../api/kind-samples.js';
import { kindNames } from '../api/request-definition.js';
import { renderKind, typeKind } from '../api/typed-kind-crd.js';
import type { InternalRequest } from '../api/types.js';
import { applyObjects, CONTROLLER_NAMESPACE, statusMessage, type Environment, type Manifest } from '../localenv/index.js';

type Typed = { metadata?: { name?: string }; spec?: Record<string, unknown>; status?: InternalRequest['status'] };

export interface TypedDemo {
  kind: string;
  resource: { group: string; version: string; plural: string };
  /** The fields as `kubectl explain` would list them: name, type, required, description. */
  fields: Array<{ name: string; type: string; required: boolean; description: string }>;
}

const IMAGE = `quay.io/example/app@sha256:${'0123456789abcdef'.repeat(4)}`;
/** The sample SigningRequest's typed fields. */
export const TYPED_SAMPLE = { image: IMAGE, tags: ['v1.0', 'stable'], signer: { keyRef: 'release-key', identity: 'release-bot' } };
export const TYPED_SAMPLE_NAME = 'sign-typed';

/** Installs the sample kind on both sides (before the controller starts, so it serves the kind from its first list). */
export async function installTypedSample(env: Environment, namespace: string, requesterUser: string, forPods: (pipeline: Manifest) => Manifest): Promise<TypedDemo> {
  const { definition } = sampleKind();
  const pipeline = forPods(sampleKind().pipeline as unknown as Manifest) as unknown as ReturnType<typeof sampleKind>['pipeline'];
  await applyObjects(env.internal.identities.admin.kubeConfig(), [
    { ...pipeline, metadata: { ...pipeline.metadata, namespace: CONTROLLER_NAMESPACE } },
    { ...definition, metadata: { ...definition.metadata, namespace: CONTROLLER_NAMESPACE } },
  ] as never);
  const [crd, ...rbac] = renderKind(definition, pipeline, { rbac: true, controller: { kind: 'User', name: env.remote.identities.controller.username } });
  const n = kindNames(definition.spec);
  await applyObjects(env.remote.identities.admin.kubeConfig(), [
    crd,
    ...rbac,
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: `${n.plural}-requester`, namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: `internal-services-${n.plural}.${n.group}-requester` },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: requesterUser }],
    },
  ] as never);
  const typing = typeKind(definition.spec, pipeline.spec.params ?? []);
  return {
    kind: n.kind,
    resource: { group: n.group, version: n.version, plural: n.plural },
    fields: typing.ok ? typing.fields.map((f) => ({ name: f.field, type: f.type === 'array' ? '[]string' : f.type === 'object' ? `object {${(f.properties ?? []).join(', ')}}` : 'string', required: f.required, description: f.description })) : [],
  };
}

/** Creates the sample SigningRequest and tries a malformed one; returns the apiserver's refusal. */
export async function submitTyped(demo: TypedDemo, requester: KubeConfig, namespace: string): Promise<string> {
  const api = requester.makeApiClient(CustomObjectsApi);
  const body = (name: string, spec: Record<string, unknown>) => ({ apiVersion: `${demo.resource.group}/${demo.resource.version}`, kind: demo.kind, metadata: { name, namespace }, spec });
  await api.createNamespacedCustomObject({ ...demo.resource, namespace, body: body(TYPED_SAMPLE_NAME, TYPED_SAMPLE) });
  try {
    await api.createNamespacedCustomObject({ ...demo.resource, namespace, body: body('sign-malformed', { image: 'quay.io/example/app:latest', tags: 'v1.0' }) });
  } catch (e) {
    return statusMessage((e as { body?: unknown }).body) ?? (e as Error).message;
  }
  throw new Error(`the malformed ${demo.kind} was accepted by the apiserver`);
}

/** Waits for the sample to finish; its last state. */
export async function followTyped(demo: TypedDemo, requester: KubeConfig, namespace: string, timeoutMs: number): Promise<Typed | undefined> {
  const api = requester.makeApiClient(CustomObjectsApi);
  const deadline = Date.now() + timeoutMs;
  let last: Typed | undefined;
  while (Date.now() < deadline) {
    last = (await api.getNamespacedCustomObject({ ...demo.resource, namespace, name: TYPED_SAMPLE_NAME })) as Typed;
    const reason = last.status?.conditions?.[0]?.reason;
    if (reason && reason !== 'Running') return last;
    await new Promise((r) => setTimeout(r, 500));
  }
  return last;
}
