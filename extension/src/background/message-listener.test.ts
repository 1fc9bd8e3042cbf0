import { fakeBrowser } from 'wxt/testing/fake-browser';
import { beforeEach, describe, expect, it } from 'vitest';
import { MessageError, sendMessage, type Handlers, type MessageType } from '../messaging.ts';
import { emptyView } from '../state/view.ts';
import { createHarness, LICENSE_A, REDIRECT_URL } from '../testing/harness.ts';
import { createMessageListener, parseEnvelope } from './message-listener.ts';

const view = emptyView('http://127.0.0.1:8787');

function stubHandlers(calls: [MessageType, unknown][] = []): Handlers {
  const record =
    <T>(type: MessageType, value: T) =>
    async (data: unknown) => {
      calls.push([type, data]);
      return value;
    };
  return {
    'view.get': record('view.get', view),
    'view.refresh': record('view.refresh', view),
    'flow.start': record('flow.start', { status: 'idle' as const }),
    'connection.disconnect': record('connection.disconnect', view),
    'session.signOut': record('session.signOut', view),
    'notice.dismiss': record('notice.dismiss', view),
    'settings.get': record('settings.get', {
      brokerUrl: 'b',
      defaultBrokerUrl: 'b',
      locale: null,
      managed: { brokerUrl: false, locale: false },
      redirectUrl: 'r',
      hostPermissionGranted: true,
    }),
    'settings.save': record('settings.save', { ok: false as const, problem: 'empty' as const }),
  };
}

describe('the message map', () => {
  beforeEach(() => {
    fakeBrowser.reset();
  });

  describe('parseEnvelope', () => {
    it.each([
      [{ type: 'view.get', data: null }, true],
      [{ type: 'flow.start', data: { locale: 'nl', reconnectId: null } }, true],
      [{ type: 'flow.start', data: { locale: 'fr', reconnectId: 'conn-a' } }, true],
      [{ type: 'flow.start', data: { locale: 'de', reconnectId: null } }, false],
      [{ type: 'flow.start', data: { locale: 'nl' } }, false],
      [{ type: 'connection.disconnect', data: { connectionId: 'x' } }, true],
      [{ type: 'connection.disconnect', data: { connectionId: '' } }, false],
      [{ type: 'settings.save', data: {} }, true],
      [{ type: 'settings.save', data: { brokerUrl: null, locale: 'fr' } }, true],
      [{ type: 'settings.save', data: { brokerUrl: 3 } }, false],
      [{ type: 'settings.save', data: { locale: 'en' } }, false],
      [{ type: 'view.get', data: { extra: 1 } }, false],
      [{ type: 'toString', data: null }, false],
      [{ type: 'unknown', data: null }, false],
      ['view.get', false],
      [null, false],
    ])('%j is accepted: %s', (message, accepted) => {
      expect(parseEnvelope(message) !== null).toBe(accepted);
    });
  });

  describe('through runtime messaging', () => {
    it('delivers a typed request to its handler and its typed answer back', async () => {
      const calls: [MessageType, unknown][] = [];
      fakeBrowser.runtime.onMessage.addListener(
        createMessageListener(stubHandlers(calls), () => true),
      );

      const answer = await sendMessage('flow.start', { locale: 'fr', reconnectId: 'conn-a' });

      expect(answer).toEqual({ status: 'idle' });
      expect(calls).toEqual([['flow.start', { locale: 'fr', reconnectId: 'conn-a' }]]);
    });

    it('leaves a malformed request unanswered, so the sender gets an error and no handler runs', async () => {
      const calls: [MessageType, unknown][] = [];
      fakeBrowser.runtime.onMessage.addListener(
        createMessageListener(stubHandlers(calls), () => true),
      );

      await expect(
        sendMessage('flow.start', { locale: 'de' as 'nl', reconnectId: null }),
      ).rejects.toBeInstanceOf(MessageError);
      expect(calls).toEqual([]);
    });

    it('turns a failing handler into an error reply, reported once', async () => {
      const errors: [MessageType, unknown][] = [];
      const handlers = { ...stubHandlers(), 'view.get': () => Promise.reject(new Error('boom')) };
      fakeBrowser.runtime.onMessage.addListener(
        createMessageListener(
          handlers,
          () => true,
          (type, error) => errors.push([type, error]),
        ),
      );

      await expect(sendMessage('view.get', null)).rejects.toThrow('view.get failed: Error');
      expect(errors).toHaveLength(1);
    });

    it('answers nothing to a sender that is not trusted', () => {
      const calls: [MessageType, unknown][] = [];
      const listener = createMessageListener(stubHandlers(calls), (sender) => sender.id === 'self');
      const replies: unknown[] = [];

      const handled = listener({ type: 'view.get', data: null }, { id: 'another-extension' }, (r) =>
        replies.push(r),
      );

      expect(handled).toBeUndefined();
      expect(calls).toEqual([]);
    });

    it('drives the real background: connect, then read the view', async () => {
      const h = await createHarness();
      h.identity.grant(h.broker, LICENSE_A);
      fakeBrowser.runtime.onMessage.addListener(createMessageListener(h.send, () => true));

      const started = await sendMessage('flow.start', { locale: 'nl', reconnectId: null });
      await h.background.idle();
      const after = await sendMessage('view.get', null);
      const settings = await sendMessage('settings.get', null);

      expect(started.status).toBe('running');
      expect(after.connections.map((c) => c.id)).toEqual(['conn-a']);
      expect(settings.redirectUrl).toBe(REDIRECT_URL);
    });
  });
});
