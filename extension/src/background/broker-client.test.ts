import { ERROR_CODES, ERROR_STATUS } from '@baton/shared';
import { describe, expect, it } from 'vitest';
import { ProblemError } from '../problems.ts';
import { createBrokerClient, parseRetryAfter, problemFromResponse } from './broker-client.ts';

const NOW = Date.UTC(2025, 0, 15, 9, 30);
const now = () => NOW;

describe('problemFromResponse', () => {
  it.each(ERROR_CODES)('keeps the broker code %s from a JSON body', async (code) => {
    const response = new Response(JSON.stringify({ error: code, message: 'x' }), {
      status: ERROR_STATUS[code],
    });
    expect(await problemFromResponse(response, now)).toEqual({ code });
  });

  it.each([
    [502, 'broker_unreachable'],
    [503, 'broker_unreachable'],
    [504, 'broker_unreachable'],
    [500, 'server_error'],
    [401, 'invalid_session'],
    [404, 'not_found'],
    [429, 'rate_limited'],
    [418, 'unexpected'],
    [302, 'unexpected'],
  ] as const)('classifies a %i without the broker JSON as %s', async (status, code) => {
    const response = new Response('<html>proxy page</html>', { status });
    expect(await problemFromResponse(response, now)).toEqual({ code });
  });

  it('ignores a JSON body whose code is not one of the broker codes', async () => {
    const response = new Response(JSON.stringify({ error: 'teapot', message: 'x' }), {
      status: 500,
    });
    expect(await problemFromResponse(response, now)).toEqual({ code: 'server_error' });
  });

  it('keeps Retry-After as an instant', async () => {
    const response = new Response(JSON.stringify({ error: 'rate_limited', message: 'x' }), {
      status: 429,
      headers: { 'Retry-After': '30' },
    });
    expect(await problemFromResponse(response, now)).toEqual({
      code: 'rate_limited',
      retryAt: NOW + 30_000,
    });
  });
});

describe('parseRetryAfter', () => {
  it.each([
    ['absent', null, undefined],
    ['seconds', '120', NOW + 120_000],
    ['an HTTP date', new Date(NOW + 60_000).toUTCString(), NOW + 60_000],
    ['a date in the past', new Date(NOW - 60_000).toUTCString(), NOW],
    ['garbage', 'soon', undefined],
    ['negative', '-5', undefined],
  ])('reads %s', (_name, header, expected) => {
    expect(parseRetryAfter(header, NOW)).toBe(expected);
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
