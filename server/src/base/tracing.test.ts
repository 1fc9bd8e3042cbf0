import {
  ROOT_CONTEXT,
  SamplingDecision,
  SpanKind,
  trace,
  TraceFlags,
  type Sampler,
} from '@opentelemetry/api';
import * as samplers from '@opentelemetry/sdk-trace';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { traceSampler, tracingRequested } from './tracing.ts';

describe('tracingRequested: OTEL_* decides, off by default', () => {
  it.each([
    [{}, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, true],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }, true],
    [{ OTEL_TRACES_EXPORTER: 'otlp' }, true],
    [{ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, false],
    [{ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, false],
    // compose passes every variable through, empty when the operator did not set it.
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: '', OTEL_TRACES_EXPORTER: '' }, false],
  ])('%j → %s', (env, on) => {
    expect(tracingRequested(env)).toBe(on);
  });
});

/** How many of `traceIds` `sampler` traces, each arriving in a caller's sampled `traceparent`. */
function tracedOf(sampler: Sampler, traceIds: string[]): number {
  return traceIds.filter((traceId) => {
    const caller = trace.setSpanContext(ROOT_CONTEXT, {
      traceId,
      spanId: '00f067aa0ba902b7',
      traceFlags: TraceFlags.SAMPLED,
      isRemote: true,
    });
    const { decision } = sampler.shouldSample(caller, traceId, 'GET', SpanKind.SERVER, {}, []);
    return decision === SamplingDecision.RECORD_AND_SAMPLED;
  }).length;
}

describe('traceSampler: a caller does not choose whether its request is traced', () => {
  /** The ids a caller picks to pass TraceIdRatioBased: 1, 2, 3… */
  const chosen = Array.from({ length: 1000 }, (_, i) => (i + 1).toString(16).padStart(32, '0'));
  /** Ids as a tracer makes them (fixed here, so the counts never vary). */
  const spread = Array.from({ length: 1000 }, (_, i) =>
    createHash('sha256').update(`trace ${i}`).digest('hex').slice(0, 32),
  );
  const secret = Buffer.alloc(32, 7);
  const sampler = (ratio: number, name: string, options: object = {}) =>
    traceSampler({ OTEL_TRACES_SAMPLER: name, OTEL_TRACES_SAMPLER_ARG: String(ratio) }, samplers, {
      secret,
      ...options,
    });

  it.each(['traceidratio', 'parentbased_traceidratio'])(
    '%s at 0.001: 1,000 low trace ids chosen by the caller, about 1 traced',
    (name) => {
      expect(tracedOf(sampler(0.001, name), chosen)).toBeLessThan(20);
    },
  );

  it.each(['traceidratio', 'parentbased_traceidratio'])(
    '%s at 0.5: about half of the trace ids, chosen or not',
    (name) => {
      for (const ids of [chosen, spread]) {
        const traced = tracedOf(sampler(0.5, name), ids);
        expect(traced).toBeGreaterThan(400);
        expect(traced).toBeLessThan(600);
      }
    },
  );

  it('decides by a secret of the process: another secret traces other ids', () => {
    const traced = (key: Buffer) => {
      const decides = traceSampler(
        { OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.5' },
        samplers,
        { secret: key },
      );
      return spread.filter((id) => tracedOf(decides, [id]) === 1);
    };
    expect(traced(Buffer.alloc(32, 1))).not.toEqual(traced(Buffer.alloc(32, 2)));
  });

  it('with TRACE_TRUST_CALLER_SAMPLING, as OpenTelemetry does: the flag, or the trace id, decides', () => {
    const trusted = { trustCallerSampling: true };
    expect(tracedOf(sampler(0.001, 'parentbased_traceidratio', trusted), spread)).toBe(1000);
    expect(tracedOf(sampler(0.001, 'traceidratio', trusted), chosen)).toBe(1000);
  });
});
