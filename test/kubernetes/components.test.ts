import { beforeAll, describe, expect, it } from 'vitest';
import { broker, OVERLAYS, render, type KubeObject } from '../support/kubernetes.ts';
import { readDoc, section } from './documented.ts';
import { renderWith } from './kustomize.ts';

/**
 * The options an operator adds to an overlay as components (docs/operations.md, "Kubernetes"),
 * each rendered on every overlay: what it changes, and that it changes nothing else.
 */

/** Everything but `path` of an object, to show a component changed that and only that. */
const without = (object: KubeObject, drop: (copy: Record<string, unknown>) => void): unknown => {
  const copy = structuredClone(object) as unknown as Record<string, unknown>;
  drop(copy);
  return copy;
};

let kubernetesSection: string;
beforeAll(async () => {
  kubernetesSection = section(await readDoc('operations.md'), '### Kubernetes');
});

describe.each(OVERLAYS)('the %s overlay', (overlay) => {
  let plain: KubeObject[];
  beforeAll(async () => {
    plain = await render(overlay);
  });

  describe('with components/strict-zone-spread', () => {
    let strict: KubeObject[];
    beforeAll(async () => {
      strict = await renderWith(overlay, ['strict-zone-spread']);
    });

    it('keeps pods from scheduling rather than put a second in a zone before every zone has one', () => {
      const spread = broker(strict).pod.topologySpreadConstraints ?? [];
      expect(spread.map((each) => [each.topologyKey, each.whenUnsatisfiable])).toEqual([
        ['topology.kubernetes.io/zone', 'DoNotSchedule'],
        ['kubernetes.io/hostname', 'ScheduleAnyway'],
      ]);
    });

    it('changes nothing else', () => {
      const zoneRule = (copy: Record<string, unknown>) => {
        const spec = copy.spec as {
          template: { spec: { topologySpreadConstraints: { whenUnsatisfiable?: string }[] } };
        };
        delete spec.template.spec.topologySpreadConstraints[0]!.whenUnsatisfiable;
      };
      expect(strict.length).toBe(plain.length);
      for (const [i, object] of strict.entries())
        if (object.kind === 'Deployment' && object.metadata.name === 'baton-broker')
          expect(without(object, zoneRule)).toEqual(without(plain[i]!, zoneRule));
        else expect(object).toEqual(plain[i]);
    });
  });

  describe('with components/kube-prometheus-stack', () => {
    let labelled: KubeObject[];
    beforeAll(async () => {
      labelled = await renderWith(overlay, ['kube-prometheus-stack']);
    });

    it('labels the ServiceMonitor and the PrometheusRule with the release kube-prometheus-stack selects', () => {
      for (const kind of ['ServiceMonitor', 'PrometheusRule']) {
        const objects = labelled.filter((each) => each.kind === kind);
        expect(objects, kind).toHaveLength(1);
        expect(objects[0]!.metadata.labels, kind).toMatchObject({
          release: 'kube-prometheus-stack',
        });
      }
    });

    it('labels nothing else', () => {
      expect(labelled.length).toBe(plain.length);
      const release = (copy: Record<string, unknown>) => {
        delete (copy.metadata as { labels: Record<string, string> }).labels.release;
      };
      for (const [i, object] of labelled.entries())
        if (object.apiVersion.startsWith('monitoring.coreos.com/'))
          expect(without(object, release)).toEqual(plain[i]);
        else expect(object).toEqual(plain[i]);
    });
  });
});

describe('docs/operations.md, "Kubernetes"', () => {
  it('names each component an operator may add, and what it is for', () => {
    for (const [component, says] of [
      ['ingress', /cert-manager\.io\/cluster-issuer/],
      ['gateway-api', /HTTPRoute/],
      ['strict-zone-spread', /DoNotSchedule/],
      ['kube-prometheus-stack', /release: kube-prometheus-stack/],
      ['admin', /baton-admin/],
    ] as const) {
      expect(kubernetesSection).toContain(`components/${component}`);
      expect(kubernetesSection).toMatch(says);
    }
  });

  it('says the zone spread is a preference unless components/strict-zone-spread makes it a rule', () => {
    expect(kubernetesSection).toMatch(/ScheduleAnyway/);
    expect(kubernetesSection).toMatch(/Pending/);
  });
});
