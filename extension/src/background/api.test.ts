import { routes } from '@baton/shared';
import { fakeBrowser } from 'wxt/testing/fake-browser';
import { beforeEach, describe, expect, it } from 'vitest';
import { batonApi } from '../api-client.ts';
import { parseApiOrigins, type ApiOrigin } from '../api-origins.ts';
import { API_MAX_ANSWER_BYTES, type ApiRequest } from '../api.ts';
import { sendMessage, MessageError } from '../messaging.ts';
import { errorResponse, jsonResponse } from '../testing/fake-broker.ts';
import {
  BROKER,
  createHarness,
  LICENSE_A,
  SESSION_TOKEN as TOKEN,
  signedIn,
  T0,
  type Harness,
} from '../testing/harness.ts';
import { createApiListener } from './api-listener.ts';
import { createMessageListener } from './message-listener.ts';
import { isExtensionPage, type MessageSender } from './senders.ts';

const ME: ApiRequest = { connectionId: 'conn-a', method: 'GET', path: 'users.me' };

describe('api.request', () => {
  it('answers with the license API’s status, body and safe headers; the token goes to the broker only', async () => {
    const h = await signedIn();
    h.broker.fail('GET', '/connections/conn-a/api/users.me', () =>
      jsonResponse(200, LICENSE_A.user, {
        ETag: '"v1"',
        'Content-Language': 'nl',
        'Set-Cookie': 'tracker=1',
        'X-Request-Id': 'r-1',
      }),
    );

    const result = await h.api['api.request'](ME);

    expect(result).toEqual({
      ok: true,
      status: 200,
      headers: { 'content-type': 'application/json', etag: '"v1"', 'content-language': 'nl' },
      body: LICENSE_A.user,
    });
    expect(h.broker.requests.map((r) => [r.method, r.url, r.authorization, r.credentials])).toEqual(
      [['GET', `${BROKER}/connections/conn-a/api/users.me`, `Bearer ${TOKEN}`, 'omit']],
    );
    expect(JSON.stringify(result)).not.toContain(TOKEN);
  });

  it('sends the method, the query and the JSON body as asked', async () => {
    const h = await signedIn();
    h.broker.fail('POST', '/connections/conn-b/api/invoices', () => jsonResponse(201, { id: 9 }));

    const result = await h.api['api.request']({
      connectionId: 'conn-b',
      method: 'POST',
      path: 'invoices',
      query: { draft: 'yes', tag: ['a', 'b'] },
      body: { amount: 12 },
    });

    expect(result).toMatchObject({ ok: true, status: 201, body: { id: 9 } });
    expect(h.broker.requests.map((r) => [r.url, r.body])).toEqual([
      [`${BROKER}/connections/conn-b/api/invoices?draft=yes&tag=a&tag=b`, { amount: 12 }],
    ]);
  });

  it('passes on the license API’s own refusal as its answer, not as an error', async () => {
    const h = await signedIn();

    const result = await h.api['api.request']({ ...ME, path: 'no/such/thing' });

    expect(result).toEqual({
      ok: true,
      status: 404,
      headers: { 'content-type': 'application/json' },
      body: { error: 'no_such_path' },
    });
  });

  it('gives a text answer as text, and no body as null', async () => {
    const h = await signedIn();
    h.broker.fail('GET', '/connections/conn-a/api/report.csv', () => new Response('a;b\n1;2\n'));
    h.broker.fail(
      'DELETE',
      '/connections/conn-a/api/drafts/1',
      () => new Response(null, { status: 204 }),
    );

    const text = await h.api['api.request']({ ...ME, path: 'report.csv' });
    const none = await h.api['api.request']({ ...ME, method: 'DELETE', path: 'drafts/1' });

    expect(text).toMatchObject({ ok: true, status: 200, body: 'a;b\n1;2\n' });
    expect(none).toMatchObject({ ok: true, status: 204, body: null });
  });

  it.each([
    ['declared', { 'Content-Length': String(API_MAX_ANSWER_BYTES + 1) }],
    ['streamed', {}],
  ])('refuses an answer over the bound (%s)', async (_how, headers) => {
    const h = await signedIn();
    h.broker.fail('GET', '/connections/conn-a/api/big', () => {
      const chunk = new Uint8Array(64 * 1024);
      let sent = 0;
      const body = new ReadableStream<Uint8Array>({
        pull(controller) {
          sent += chunk.length;
          if (sent > 2 * API_MAX_ANSWER_BYTES) controller.close();
          else controller.enqueue(chunk);
        },
      });
      return new Response(body, { headers });
    });

    const result = await h.api['api.request']({ ...ME, path: 'big' });

    expect(result).toEqual({
      ok: false,
      error: { code: 'answer_too_large', message: expect.any(String) },
    });
  });

  it.each([
    ['reauthorization_required', errorResponse('reauthorization_required')],
    ['upstream_unavailable', errorResponse('upstream_unavailable')],
    ['upstream_too_large', errorResponse('upstream_too_large')],
    ['not_found', errorResponse('not_found')],
  ])('gives the broker’s own error as %s', async (code, response) => {
    const h = await signedIn();
    h.broker.fail('GET', '/connections/conn-a/api/users.me', () => response);

    const result = await h.api['api.request'](ME);

    expect(result).toEqual({ ok: false, error: { code, message: expect.any(String) } });
  });

  it('says when to try again after rate_limited', async () => {
    const h = await signedIn();
    h.broker.fail('GET', '/connections/conn-a/api/users.me', () =>
      errorResponse('rate_limited', { 'Retry-After': '30' }),
    );

    const result = await h.api['api.request'](ME);

    expect(result).toMatchObject({
      ok: false,
      error: { code: 'rate_limited', retryAt: T0 + 30_000 },
    });
  });

  it('ends the session when the broker says it is gone, as the popup would', async () => {
    const h = await signedIn();
    h.broker.fail('GET', '/connections/conn-a/api/users.me', () =>
      errorResponse('invalid_session'),
    );

    const result = await h.api['api.request'](ME);

    expect(result).toMatchObject({ ok: false, error: { code: 'invalid_session' } });
    expect((await h.state.read()).session).toBeNull();
    expect(await h.view()).toMatchObject({ signedIn: false, notice: { kind: 'session_ended' } });
  });

  it('when signed out, says so and calls nothing', async () => {
    const h = await createHarness();

    const result = await h.api['api.request'](ME);

    expect(result).toMatchObject({ ok: false, error: { code: 'signed_out' } });
    expect(h.broker.requests).toEqual([]);
  });

  it('without the broker’s host permission, says so and calls nothing', async () => {
    const h = await signedIn();
    h.granted.clear();

    const result = await h.api['api.request'](ME);

    expect(result).toMatchObject({ ok: false, error: { code: 'permission_missing' } });
    expect(h.broker.requests).toEqual([]);
  });

  it('when the broker cannot be reached, says so', async () => {
    const h = await signedIn();
    h.broker.unreachable = true;

    expect(await h.api['api.request'](ME)).toMatchObject({
      ok: false,
      error: { code: 'broker_unreachable' },
    });
  });

  it('refuses a request the broker would refuse, before it leaves', async () => {
    const h = await signedIn();

    const result = await h.api['api.request']({ ...ME, path: '../oauth2/access_token' });

    expect(result).toMatchObject({ ok: false, error: { code: 'invalid_request' } });
    expect(h.broker.requests).toEqual([]);
  });
});

describe('api.connections', () => {
  it('lists the session’s connections, without anything secret', async () => {
    const h = await signedIn();
    h.broker.disconnect(TOKEN, 'conn-b', 'refresh_rejected');

    const result = await h.api['api.connections'](null);

    expect(result).toEqual({
      ok: true,
      connections: [
        {
          id: 'conn-a',
          status: 'connected',
          apiOrigin: 'https://api.provider.example',
          disconnectedReason: null,
        },
        {
          id: 'conn-b',
          status: 'disconnected',
          apiOrigin: 'https://api-eu2.provider.example',
          disconnectedReason: 'refresh_rejected',
        },
      ],
    });
    expect(h.broker.requestsTo('GET', routes.connections)).toHaveLength(1);
  });

  it('when signed out, says so', async () => {
    const h = await createHarness();
    expect(await h.api['api.connections'](null)).toMatchObject({
      ok: false,
      error: { code: 'signed_out' },
    });
  });
});

describe('through runtime messaging: the client, the two listeners and the sender rules', () => {
  const self = {
    id: fakeBrowser.runtime.id,
    pagesBase: `chrome-extension://${fakeBrowser.runtime.id}/`,
  };
  const origins: readonly ApiOrigin[] = (() => {
    const parsed = parseApiOrigins('https://app.example.com');
    if (!parsed.ok) throw new Error('origins');
    return parsed.origins;
  })();
  const page: MessageSender = { id: self.id, url: `${self.pagesBase}options.html` };
  const contentScript = (origin: string): MessageSender => ({
    id: self.id,
    url: `${origin}/billing`,
    origin,
    tab: { id: 3 },
  });
  let h: Harness;
  /** Who the next message comes from: the browser says it, so the test does. */
  let sender: MessageSender;

  beforeEach(async () => {
    h = await signedIn();
    const fixed = createMessageListener(h.send, (s) => isExtensionPage(s, self));
    const api = createApiListener(h.api, { self, origins });
    type Reply = (reply: unknown) => void;
    fakeBrowser.runtime.onMessage.addListener((message: unknown, _ignored: unknown, reply: Reply) =>
      fixed(message, sender, reply),
    );
    fakeBrowser.runtime.onMessage.addListener((message: unknown, _ignored: unknown, reply: Reply) =>
      api(message, sender, reply),
    );
  });

  it('a content script on a listed origin gets the user record', async () => {
    sender = contentScript('https://app.example.com');

    const list = await batonApi.connections();
    const me = await batonApi.request(ME);

    expect(list).toMatchObject({ ok: true, connections: [{ id: 'conn-a' }, { id: 'conn-b' }] });
    expect(me).toMatchObject({ ok: true, status: 200, body: LICENSE_A.user });
  });

  it('an extension page gets it too', async () => {
    sender = page;
    expect(await batonApi.request(ME)).toMatchObject({ ok: true, status: 200 });
  });

  it('a content script on an origin not listed gets origin_not_allowed, and the broker is not called', async () => {
    sender = contentScript('https://elsewhere.example.com');

    const me = await batonApi.request(ME);
    const list = await batonApi.connections();

    expect(me).toEqual({
      ok: false,
      error: { code: 'origin_not_allowed', message: expect.any(String) },
    });
    expect(list).toMatchObject({ ok: false, error: { code: 'origin_not_allowed' } });
    expect(h.broker.requests).toEqual([]);
  });

  it('another extension gets no answer at all', async () => {
    sender = { id: 'another-extension', url: 'chrome-extension://another-extension/x.html' };

    expect(await batonApi.request(ME)).toMatchObject({ ok: false, error: { code: 'no_answer' } });
    expect(h.broker.requests).toEqual([]);
  });

  it('the popup’s messages answer extension pages, never a content script, even on a listed origin', async () => {
    sender = page;
    expect((await sendMessage('view.get', null)).signedIn).toBe(true);

    sender = contentScript('https://app.example.com');
    await expect(sendMessage('view.get', null)).rejects.toBeInstanceOf(MessageError);
    await expect(
      sendMessage('settings.save', { brokerUrl: 'https://evil.example.com' }),
    ).rejects.toBeInstanceOf(MessageError);
    expect((await h.state.read()).settings.brokerUrl).toBeNull();
  });
});
