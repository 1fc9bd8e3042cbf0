import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Span,
  type SpanOptions,
} from '@opentelemetry/api';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Store } from './store/types.ts';

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
 */
export async function startTracing(env: Env): Promise<(() => Promise<void>) | undefined> {
  if (!tracingRequested(env)) return undefined;
  // Loaded only when asked for: a broker without tracing never loads the SDK.
  const [{ NodeSDK }, { UndiciInstrumentation }] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/instrumentation-undici'),
  ]);
  const sdk = new NodeSDK({
    serviceName: env['OTEL_SERVICE_NAME'] ?? 'baton-broker',
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

const spans = new WeakMap<ServerResponse, Span>();

/**
 * A request listener with a server span around it, the incoming `traceparent` its parent. The span
 * is named `METHOD route` once the route is known (namedRoute), and ends with the answer.
 */
export function tracedListener(listener: RequestListener): RequestListener {
  return (req: IncomingMessage, res: ServerResponse) => {
    if (!tracing) return listener(req, res);
    const method = req.method ?? 'GET';
    const parent = propagation.extract(ROOT_CONTEXT, req.headers);
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
function spanAround<T>(name: string, options: SpanOptions, work: () => Promise<T>): Promise<T> {
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

/**
 * The store with a client span per operation (`redis getVersioned`...): the operation's name, never
 * its keys or values. Used only when tracing is on.
 */
export function tracedStore(store: Store): Store {
  const traced: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(store) as [
    string,
    (...args: unknown[]) => Promise<unknown>,
  ][]) {
    const options: SpanOptions = {
      kind: SpanKind.CLIENT,
      attributes: { 'db.system.name': 'redis', 'db.operation.name': name },
    };
    traced[name] =
      name === 'close'
        ? method
        : (...args: unknown[]) => spanAround(`redis ${name}`, options, () => method(...args));
  }
  return traced as unknown as Store;
}
