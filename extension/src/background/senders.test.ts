import { describe, expect, it } from 'vitest';
import { callerOf, isExtensionPage, type MessageSender } from './senders.ts';

const self = { id: 'baton-id', pagesBase: 'chrome-extension://baton-id/' };
const tab = { id: 7 };

describe('callerOf', () => {
  it.each<[string, MessageSender, ReturnType<typeof callerOf>]>([
    [
      'the popup',
      { id: 'baton-id', url: 'chrome-extension://baton-id/popup.html' },
      { kind: 'extension-page' },
    ],
    [
      'the popup opened as a tab (Chrome says its origin)',
      {
        id: 'baton-id',
        url: 'chrome-extension://baton-id/popup.html',
        origin: 'chrome-extension://baton-id',
        tab,
      },
      { kind: 'extension-page' },
    ],
    [
      'a content script',
      {
        id: 'baton-id',
        url: 'https://app.example.com/x?y#z',
        origin: 'https://app.example.com',
        tab,
      },
      { kind: 'content-script', origin: 'https://app.example.com' },
    ],
    [
      'a content script in Firefox (no sender.origin)',
      { id: 'baton-id', url: 'http://127.0.0.1:4321/page', tab },
      { kind: 'content-script', origin: 'http://127.0.0.1:4321' },
    ],
    ['another extension', { id: 'other-id', url: 'chrome-extension://other-id/x.html' }, null],
    [
      'another extension that names our pages',
      { id: 'other-id', url: 'chrome-extension://baton-id/popup.html' },
      null,
    ],
    ['no URL', { id: 'baton-id' }, null],
    ['no id', { url: 'chrome-extension://baton-id/popup.html' }, null],
    [
      'a look-alike extension host',
      { id: 'baton-id', url: 'chrome-extension://baton-id.evil/popup.html', tab },
      null,
    ],
    [
      'a content script without a tab',
      { id: 'baton-id', url: 'https://app.example.com/', origin: 'https://app.example.com' },
      null,
    ],
    [
      'an about:blank frame (its origin is its parent’s)',
      { id: 'baton-id', url: 'about:blank', origin: 'https://app.example.com', tab },
      null,
    ],
    [
      'a sandboxed frame (opaque origin)',
      { id: 'baton-id', url: 'https://app.example.com/frame', origin: 'null', tab },
      null,
    ],
    ['a file page', { id: 'baton-id', url: 'file:///tmp/page.html', tab }, null],
    ['a data URL', { id: 'baton-id', url: 'data:text/html,hi', tab }, null],
  ])('%s', (_name, sender, expected) => {
    expect(callerOf(sender, self)).toEqual(expected);
  });
});

describe('isExtensionPage (the popup’s and options page’s messages)', () => {
  it('is the extension’s pages only, never one of its content scripts', () => {
    expect(
      isExtensionPage({ id: 'baton-id', url: 'chrome-extension://baton-id/options.html' }, self),
    ).toBe(true);
    expect(isExtensionPage({ id: 'baton-id', url: 'https://app.example.com/', tab }, self)).toBe(
      false,
    );
  });
});
