import {
  context,
  defaultTextMapGetter,
  ROOT_CONTEXT,
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
 * caller's sampled flag does not decide: the configured sampler's own rule does (its root, by the
 * trace id), unless `trustCallerSampling` says the caller is a proxy of the operator's own.
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
  const { sampler, root } = samplerFromEnv(env, samplers);
  const sdk = new NodeSDK({
    serviceName: env['OTEL_SERVICE_NAME'] ?? 'baton-broker',
    sampler: options.trustCallerSampling === true ? sampler : new CallerSampler(sampler, root),
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
 * The sampler OTEL_TRACES_SAMPLER and its argument name (as the SDK reads them; default
 * parentbased_always_on), and its root: what decides when no parent is trusted.
 */
export function samplerFromEnv(env: Env, samplers: Samplers): { sampler: Sampler; root: Sampler } {
  const name = env['OTEL_TRACES_SAMPLER'] || 'parentbased_always_on';
  const ratio = Number(env['OTEL_TRACES_SAMPLER_ARG'] || '1');
  const bare = name.replace(/^parentbased_/, '');
  const root =
    bare === 'always_off'
      ? new samplers.AlwaysOffSampler()
      : bare === 'traceidratio'
        ? new samplers.TraceIdRatioBasedSampler(Number.isFinite(ratio) ? ratio : 1)
        : new samplers.AlwaysOnSampler();
  const sampler = name.startsWith('parentbased_')
    ? new samplers.ParentBasedSampler({ root })
    : root;
  return { sampler, root };
}

/**
 * A caller's sampled flag is the caller's say: for a span whose parent came from the caller (the
 * server span), `root` decides by the trace id, as for a trace begun here; for every other span,
 * the configured sampler.
 */
export class CallerSampler implements Sampler {
  readonly #sampler: Sampler;
  readonly #root: Sampler;
  constructor(sampler: Sampler, root: Sampler) {
    this.#sampler = sampler;
    this.#root = root;
  }

  shouldSample(...args: Parameters<Sampler['shouldSample']>): SamplingResult {
    const [parent] = args;
    const decides = trace.getSpanContext(parent)?.isRemote === true ? this.#root : this.#sampler;
    return decides.shouldSample(...args);
  }

  toString(): string {
    return `CallerSampler{${this.#sampler.toString()}, callers decide nothing}`;
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
