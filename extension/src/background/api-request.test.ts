import { describe, expect, it } from 'vitest';
import { PROXY_MAX_REQUEST_BYTES } from '@baton/shared';
import { API_MAX_QUERY_LENGTH } from '../api.ts';
import { checkApiRequest } from './api-request.ts';

const base = { connectionId: 'conn-a', method: 'GET', path: 'users.me' };

describe('checkApiRequest', () => {
  it('takes a plain call, with no query and no body', () => {
    expect(checkApiRequest(base)).toEqual({
      ok: true,
      call: { connectionId: 'conn-a', method: 'GET', path: 'users.me', query: '', body: null },
    });
  });

  it('encodes the query (arrays repeat the name) and the body as JSON', () => {
    const checked = checkApiRequest({
      ...base,
      method: 'POST',
      path: 'invoices/42/lines',
      query: { q: 'a b&c', tag: ['x', 'y'] },
      body: { amount: 12.5, lines: [1, 2] },
    });
    expect(checked).toEqual({
      ok: true,
      call: {
        connectionId: 'conn-a',
        method: 'POST',
        path: 'invoices/42/lines',
        query: 'q=a+b%26c&tag=x&tag=y',
        body: '{"amount":12.5,"lines":[1,2]}',
      },
    });
  });

  it.each<[string, unknown, string]>([
    ['not an object', 'users.me', 'must be an object'],
    ['an unknown field (a typo)', { ...base, params: {} }, 'Unknown fields: params'],
    ['no connection', { ...base, connectionId: '' }, 'connectionId'],
    ['a huge connection id', { ...base, connectionId: 'c'.repeat(257) }, 'connectionId'],
    ['a connection id that is a dot segment', { ...base, connectionId: '.' }, 'connectionId'],
    ['a connection id that is a dot-dot segment', { ...base, connectionId: '..' }, 'connectionId'],
    ['a connection id with a slash', { ...base, connectionId: 'a/b' }, 'connectionId'],
    ['a connection id with a percent', { ...base, connectionId: '%2e' }, 'connectionId'],
    ['a connection id with a space', { ...base, connectionId: 'conn a' }, 'connectionId'],
    ['a connection id with a dot', { ...base, connectionId: 'conn.a' }, 'connectionId'],
    ['a method the broker does not proxy', { ...base, method: 'HEAD' }, 'method must be one of'],
    ['a lower-case method', { ...base, method: 'get' }, 'method must be one of'],
    ['a leading slash', { ...base, path: '/users.me' }, 'path'],
    ['a dot-dot segment', { ...base, path: 'users/../oauth2/access_token' }, 'path'],
    ['an encoded dot-dot', { ...base, path: '%2e%2e/x' }, 'path'],
    ['the token endpoint', { ...base, path: 'oauth2/access_token' }, 'path'],
    ['a query in the path', { ...base, path: 'users.me?fields=email' }, 'path'],
    ['a fragment in the path', { ...base, path: 'users.me#x' }, 'path'],
    ['a path that is not text', { ...base, path: 42 }, 'path'],
    ['a query of numbers', { ...base, query: { n: 1 } }, 'query must map'],
    ['a query that is a string', { ...base, query: 'a=1' }, 'query must map'],
    [
      'a query too long',
      { ...base, query: { q: 'x'.repeat(API_MAX_QUERY_LENGTH) } },
      'The query is longer',
    ],
    ['a body on GET', { ...base, body: {} }, 'A GET request takes no body'],
    [
      'a body that is not JSON',
      { ...base, method: 'POST', body: 10n },
      'body must be a JSON value',
    ],
    [
      'a body over 1 MiB',
      { ...base, method: 'PUT', body: 'x'.repeat(PROXY_MAX_REQUEST_BYTES) },
      'The body is larger',
    ],
  ])('refuses %s, naming the field', (_name, data, why) => {
    const checked = checkApiRequest(data);
    expect(checked.ok).toBe(false);
    if (!checked.ok) {
      expect(checked.error.code).toBe('invalid_request');
      expect(checked.error.message).toContain(why);
    }
  });
});
