import * as monitoring from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import * as core from 'kubernetes-models/v1';
import * as apps from 'kubernetes-models/apps/v1';
import * as autoscaling from 'kubernetes-models/autoscaling/v2';
import * as networking from 'kubernetes-models/networking.k8s.io/v1';
import * as policy from 'kubernetes-models/policy/v1';
import * as rbac from 'kubernetes-models/rbac.authorization.k8s.io/v1';
import { expect } from 'vitest';
import type { KubeObject } from '../support/kubernetes.ts';

/**
 * The Kubernetes API's schemas (kubernetes-models; the Prometheus operator's for its two kinds),
 * for every kind a rendered overlay holds, with or without the components an operator adds.
 */
interface Model {
  apiVersion: string;
  kind: string;
  new (data: unknown): { validate(): void };
}
const isModel = (value: unknown): value is Model =>
  typeof value === 'function' &&
  typeof (value as Partial<Model>).apiVersion === 'string' &&
  typeof (value as Partial<Model>).kind === 'string';
const MODELS: Model[] = [core, apps, autoscaling, networking, policy, rbac, monitoring]
  .flatMap((module) => Object.values(module) as unknown[])
  .filter(isModel);

/** Fails, naming the object, unless every one has a schema and validates against it. */
export function expectValid(objects: KubeObject[]): void {
  expect(objects.length).toBeGreaterThan(0);
  for (const object of objects) {
    const model = MODELS.find(
      (each) => each.apiVersion === object.apiVersion && each.kind === object.kind,
    );
    expect(model, `a schema for ${object.apiVersion} ${object.kind}`).toBeDefined();
    expect(
      () => new model!(object).validate(),
      `${object.kind} ${object.metadata.name}`,
    ).not.toThrow();
  }
  const names = objects.map((each) => `${each.kind}/${each.metadata.name}`);
  expect(new Set(names).size, 'each kind and name once').toBe(names.length);
}
