import { BROKER_ERROR_HEADER, ERROR_CODES, ERROR_STATUS, type ErrorCode } from '@baton/shared';
import { describe, expect, it } from 'vitest';
import { ProblemError } from '../problems.ts';
import { createBrokerClient, problemFromResponse } from './broker-client.ts';

const NOW = Date.UTC(2025, 0, 15, 9, 30);
const now = () => NOW;

describe('problemFromResponse', () => {
  const marked = (code: ErrorCode, headers: Record<string, string> = {}) =>
    new Response(JSON.stringify({ error: code, message: 'x' }), {
      status: ERROR_STATUS[code],
      headers: { [BROKER_ERROR_HEADER]: code, ...headers },
    });

  it.each(ERROR_CODES)("keeps the broker code %s when the broker's mark says so", async (code) => {
    expect(await problemFromResponse(marked(code), now)).toEqual({ code });
  });

  it.each([
    [502, 'broker_unreachable'],
    [503, 'broker_unreachable'],
    [504, 'broker_unreachable'],
    [500, 'server_error'],
    [401, 'unexpected'],
    [404, 'not_found'],
    [429, 'rate_limited'],
    [418, 'unexpected'],
    [302, 'unexpected'],
  ] as const)('classifies a %i without the broker mark as %s', async (status, code) => {
    const response = new Response('<html>proxy page</html>', { status });
    expect(await problemFromResponse(response, now)).toEqual({ code });
  });

  it('never takes an unmarked body for the broker word, however it looks', async () => {
    const forged = new Response(JSON.stringify({ error: 'invalid_session', message: 'x' }), {
      status: 401,
    });
    expect(await problemFromResponse(forged, now)).toEqual({ code: 'unexpected' });
  });

  it('reads an unmarked answer to a proxied call as the license API refusing that call', async () => {
    const forged = new Response(JSON.stringify({ error: 'invalid_session', message: 'x' }), {
      status: 401,
    });
    expect(await problemFromResponse(forged, now, 'upstream')).toEqual({
      code: 'upstream_refused',
      status: 401,
    });
    expect(await problemFromResponse(marked('invalid_session'), now, 'upstream')).toEqual({
      code: 'invalid_session',
    });
  });

  it('ignores a mark that is not one of the broker codes', async () => {
    const response = new Response('{}', {
      status: 500,
      headers: { [BROKER_ERROR_HEADER]: 'teapot' },
    });
    expect(await problemFromResponse(response, now)).toEqual({ code: 'unexpected' });
  });

  it('keeps Retry-After as an instant', async () => {
    expect(await problemFromResponse(marked('rate_limited', { 'Retry-After': '30' }), now)).toEqual(
      {
        code: 'rate_limited',
        retryAt: NOW + 30_000,
      },
    );
  });
});

describe('createBrokerClient', () => {
  const base = 'https://broker.example';

  it('sends the bearer only to the broker, never cookies, never following redirects', async () => {
    const seen: { url: string; init: RequestInit | undefined }[] = [];
    const client = createBrokerClient({
      baseUrl: base,
      now,
      fetch: async (input, init) => {
        seen.push({ url: String(input), init });
        return new Response(JSON.stringify({ connections: [] }), { status: 200 });
      },
    });

    await client.listConnections('tok');

    expect(seen).toHaveLength(1);
    expect(seen[0]?.url).toBe(`${base}/connections`);
    expect(new Headers(seen[0]?.init?.headers).get('Authorization')).toBe('Bearer tok');
    expect(seen[0]?.init).toMatchObject({ method: 'GET', credentials: 'omit', redirect: 'manual' });
  });

  it('encodes the connection id into the proxy path', async () => {
    const urls: string[] = [];
    const client = createBrokerClient({
      baseUrl: base,
      now,
      fetch: async (input) => {
        urls.push(String(input));
        return new Response('{}', { status: 200 });
      },
    });

    await client.getUser('tok', 'a/b?c');

    expect(urls).toEqual([`${base}/connections/a%2Fb%3Fc/api/users.me`]);
  });

  it.each([
    ['a network failure', new TypeError('Failed to fetch'), 'broker_unreachable'],
    ['a timeout', new DOMException('timed out', 'TimeoutError'), 'timeout'],
  ])('turns %s into a problem', async (_name, error, code) => {
    const client = createBrokerClient({ baseUrl: base, now, fetch: () => Promise.reject(error) });

    const failure = await client.listConnections('tok').catch((e: unknown) => e);

    expect(failure).toBeInstanceOf(ProblemError);
    expect((failure as ProblemError).problem).toEqual({ code });
  });

  it('rejects a 200 that is not JSON as unexpected', async () => {
    const client = createBrokerClient({
      baseUrl: base,
      now,
      fetch: async () => new Response('<html>', { status: 200 }),
    });

    await expect(client.getUser('t', 'c')).rejects.toMatchObject({
      problem: { code: 'unexpected' },
    });
  });

  it('ping succeeds on any answer, even an error status', async () => {
    const client = createBrokerClient({
      baseUrl: base,
      now,
      fetch: async () => new Response('down for maintenance', { status: 503 }),
    });

    await expect(client.ping()).resolves.toBeUndefined();
  });
});
