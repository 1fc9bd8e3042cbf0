import {
  context,
  defaultTextMapGetter,
  ROOT_CONTEXT,
  SamplingDecision,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context,
  type Sampler,
  type SamplingResult,
  type Span,
  type SpanOptions,
} from '@opentelemetry/api';
import type * as SdkTrace from '@opentelemetry/sdk-trace';
import { createHmac, randomBytes } from 'node:crypto';
import type {
  IncomingHttpHeaders,
  IncomingMessage,
  RequestListener,
  ServerResponse,
} from 'node:http';

/**
 * OpenTelemetry tracing, off unless the standard OTEL_* variables ask for it (startTracing). When
 * off, no span is made anywhere: every helper here checks `tracing` first and goes straight to the
 * work, so the hot path allocates nothing for it.
 *
 * What is traced: each request (a server span, continuing an incoming `traceparent`), the calls
 * to the provider (token endpoint and license API, by undici's diagnostics channels, with the
 * W3C `traceparent` sent upstream), each store operation on Redis, and a refresh with its lock
 * wait. Attributes hold route templates, methods, statuses and origins: never a token, a code, a
 * secret, a session handle or a key (keys hold the session id).
 */
let tracing = false;
const tracer = trace.getTracer('baton-broker');

export const tracingOn = (): boolean => tracing;

type Env = Record<string, string | undefined>;

/**
 * Whether OTEL_* asks for traces: an exporter or an OTLP endpoint, and the SDK not disabled. An
 * empty variable is an unset one (compose passes every variable through, empty when not set).
 */
export function tracingRequested(env: Env): boolean {
  const set = (name: string) => (env[name] ?? '') !== '';
  if (env['OTEL_SDK_DISABLED'] === 'true') return false;
  if (set('OTEL_TRACES_EXPORTER')) return env['OTEL_TRACES_EXPORTER'] !== 'none';
  return set('OTEL_EXPORTER_OTLP_ENDPOINT') || set('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
}

/**
 * Starts the OpenTelemetry SDK as OTEL_* configures it (exporter, endpoint, headers, sampler,
 * resource, service name: `baton-broker` unless OTEL_SERVICE_NAME says otherwise). Answers the
 * SDK's shutdown (it flushes what is buffered), or undefined when tracing is off.
 *
 * The trace context is a trust boundary. A caller's `traceparent` is continued (its trace id and
 * span are the server span's parent), but nothing else it sends: its `tracestate` and `baggage`
 * are never read, so they never go upstream, and only W3C trace context is propagated. And the
 * caller decides nothing about sampling: not by its sampled flag (the configured sampler's root
 * decides), nor by the trace id it picks (a ratio is drawn by a keyed hash of the id,
 * traceSampler), unless `trustCallerSampling` says the caller is a proxy of the operator's own.
 */
export async function startTracing(
  env: Env,
  options: { trustCallerSampling?: boolean } = {},
): Promise<(() => Promise<void>) | undefined> {
  if (!tracingRequested(env)) return undefined;
  // Loaded only when asked for: a broker without tracing never loads the SDK.
  const [{ NodeSDK }, { UndiciInstrumentation }, { W3CTraceContextPropagator }, samplers] =
    await Promise.all([
      import('@opentelemetry/sdk-node'),
      import('@opentelemetry/instrumentation-undici'),
      import('@opentelemetry/core'),
      import('@opentelemetry/sdk-trace'),
    ]);
  const w3c = new W3CTraceContextPropagator();
  extractCaller = (headers) =>
    typeof headers.traceparent === 'string'
      ? w3c.extract(ROOT_CONTEXT, { traceparent: headers.traceparent }, defaultTextMapGetter)
      : ROOT_CONTEXT;
  const sdk = new NodeSDK({
    serviceName: env['OTEL_SERVICE_NAME'] ?? 'baton-broker',
    sampler: traceSampler(env, samplers, options),
    textMapPropagator: w3c,
    instrumentations: [
      new UndiciInstrumentation({
        // The path, not the query: a license API's query is the user's business.
        requestHook: (span, request) => {
          const full = `${request.origin}${request.path.split('?', 1)[0] ?? ''}`;
          span.setAttribute('url.full', full);
          span.setAttribute('url.query', '');
        },
      }),
    ],
  });
  sdk.start();
  tracing = true;
  return async () => {
    tracing = false;
    await sdk.shutdown();
  };
}

type Samplers = typeof SdkTrace;

/**
 * The broker's sampler: OTEL_TRACES_SAMPLER's as the SDK builds it when callers are trusted; else a
 * CallerSampler, whose ratio (traceidratio) is drawn by a keyed hash of the trace id, under
 * `secret` (random for each process unless a test gives one).
 */
export function traceSampler(
  env: Env,
  samplers: Samplers,
  options: { trustCallerSampling?: boolean; secret?: Uint8Array } = {},
): Sampler {
  const { sampler, root, ratio } = samplerFromEnv(env, samplers);
  if (options.trustCallerSampling === true) return sampler;
  const callers =
    ratio === undefined ? root : new KeyedRatioSampler(ratio, options.secret ?? randomBytes(32));
  return new CallerSampler(sampler, callers);
}

/**
 * The sampler OTEL_TRACES_SAMPLER and its argument name (as the SDK reads them; default
 * parentbased_always_on), its root (what decides when no parent is trusted) and, when that root
 * samples by trace id, its ratio.
 */
export function samplerFromEnv(
  env: Env,
  samplers: Samplers,
): { sampler: Sampler; root: Sampler; ratio: number | undefined } {
  const name = env['OTEL_TRACES_SAMPLER'] || 'parentbased_always_on';
  const arg = Number(env['OTEL_TRACES_SAMPLER_ARG'] || '1');
  const bare = name.replace(/^parentbased_/, '');
  const ratio = bare === 'traceidratio' ? (Number.isFinite(arg) ? arg : 1) : undefined;
  const root =
    bare === 'always_off'
      ? new samplers.AlwaysOffSampler()
      : ratio !== undefined
        ? new samplers.TraceIdRatioBasedSampler(ratio)
        : new samplers.AlwaysOnSampler();
  const sampler = name.startsWith('parentbased_')
    ? new samplers.ParentBasedSampler({ root })
    : root;
  return { sampler, root, ratio };
}

/**
 * Samples `ratio` of traces by an HMAC-SHA-256 of the trace id under a secret of the process, not
 * by the id's value as TraceIdRatioBased does: a caller picks its trace id, and with it would pick
 * the outcome (ids 1, 2, 3… pass any ratio there). One trace id gets one decision in this process.
 */
export class KeyedRatioSampler implements Sampler {
  readonly #ratio: number;
  readonly #secret: Uint8Array;
  constructor(ratio: number, secret: Uint8Array) {
    this.#ratio = ratio;
    this.#secret = secret;
  }

  shouldSample(_context: Context, traceId: string): SamplingResult {
    // The hash's first 48 bits as a share of their range: uniform in [0, 1) for any id.
    const share =
      createHmac('sha256', this.#secret).update(traceId).digest().readUIntBE(0, 6) / 2 ** 48;
    return {
      decision:
        share < this.#ratio ? SamplingDecision.RECORD_AND_SAMPLED : SamplingDecision.NOT_RECORD,
    };
  }

  toString(): string {
    return `KeyedRatio{${this.#ratio}}`;
  }
}

/**
 * A caller's sampled flag is the caller's say: for a span whose parent came from the caller (the
 * server span), `callers` decides (the configured root, with a keyed ratio for traceidratio), as
 * for a trace begun here; for every other span, the configured sampler.
 */
export class CallerSampler implements Sampler {
  readonly #sampler: Sampler;
  readonly #callers: Sampler;
  constructor(sampler: Sampler, callers: Sampler) {
    this.#sampler = sampler;
    this.#callers = callers;
  }

  shouldSample(...args: Parameters<Sampler['shouldSample']>): SamplingResult {
    const [parent] = args;
    const decides = trace.getSpanContext(parent)?.isRemote === true ? this.#callers : this.#sampler;
    return decides.shouldSample(...args);
  }

  toString(): string {
    return `CallerSampler{${this.#sampler.toString()}, for callers ${this.#callers.toString()}}`;
  }
}

/** The caller's trace context (its `traceparent` alone), once tracing is on. */
let extractCaller: (headers: IncomingHttpHeaders) => Context = () => ROOT_CONTEXT;

const spans = new WeakMap<ServerResponse, Span>();

/**
 * A request listener with a server span around it, the incoming `traceparent` its parent. The span
 * is named `METHOD route` once the route is known (namedRoute), and ends with the answer.
 */
export function tracedListener(listener: RequestListener): RequestListener {
  return (req: IncomingMessage, res: ServerResponse) => {
    if (!tracing) return listener(req, res);
    const method = req.method ?? 'GET';
    const parent = extractCaller(req.headers);
    const span = tracer.startSpan(
      method,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': method } },
      parent,
    );
    spans.set(res, span);
    res.once('close', () => {
      span.setAttribute('http.response.status_code', res.statusCode);
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      if (!res.writableFinished) span.setAttribute('error.type', 'aborted');
      // After every other 'close' listener: the access log names the route in one of them.
      queueMicrotask(() => span.end());
    });
    context.with(trace.setSpan(parent, span), () => listener(req, res));
  };
}

/** Names the request's span by its route template (the access log knows it at the end). */
export function namedRoute(res: ServerResponse, method: string, route: string): void {
  const span = tracing ? spans.get(res) : undefined;
  if (!span) return;
  span.setAttribute('http.route', route);
  span.updateName(`${method} ${route}`);
}

/** `work` inside a new active span, ended when it settles; an error marks it. */
export function spanAround<T>(
  name: string,
  options: SpanOptions,
  work: () => Promise<T>,
): Promise<T> {
  return tracer.startActiveSpan(name, options, async (span) => {
    try {
      return await work();
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR });
      span.setAttribute('error.type', (error as Error).name);
      throw error;
    } finally {
      span.end();
    }
  });
}

/** `work` inside a span of its own (internal); just `work` when tracing is off. */
export function inSpan<T>(
  name: string,
  work: () => Promise<T>,
  attributes?: Record<string, string | number | boolean>,
): Promise<T> {
  return tracing ? spanAround(name, attributes ? { attributes } : {}, work) : work();
}
