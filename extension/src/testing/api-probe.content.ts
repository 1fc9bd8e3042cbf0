import { browser } from 'wxt/browser';
import { defineContentScript } from 'wxt/utils/define-content-script';
import { batonApi } from '../api-client.ts';

/**
 * A content script built only for the end-to-end tests (BATON_E2E=1; wxt.config.ts refuses it in a
 * release build): on a test page it calls the integrator's API as an integrator's content script
 * would, and writes what it got into the page, where the test reads it. It is declared for a
 * listed origin (127.0.0.1) and for one the build does not list (127.0.0.2), which the background
 * must refuse. It writes only the fields the test checks, as text. It also listens for changes
 * (`batonApi.onChange`) from the moment it starts, and writes each one it hears, in order.
 */
export const E2E_PROBE_MATCHES = ['http://127.0.0.1/baton-e2e/*', 'http://127.0.0.2/baton-e2e/*'];

export default defineContentScript({
  matches: E2E_PROBE_MATCHES,
  main: () => {
    listen();
    void probe();
  },
});

/** `[data-testid="baton-e2e-changes"]`: its state (listening, stopped + code), one line a change. */
function listen(): void {
  const out = document.createElement('section');
  out.dataset['testid'] = 'baton-e2e-changes';
  out.dataset['state'] = 'starting';
  document.body.append(out);
  batonApi.onChange(
    (change) => {
      const element = document.createElement('p');
      element.dataset['testid'] = 'change';
      element.dataset['kind'] = change.kind;
      element.dataset['connectionId'] = 'connectionId' in change ? change.connectionId : '';
      out.append(element);
    },
    {
      onStatus: (status) => {
        out.dataset['state'] = status.state;
        if (status.state === 'stopped') out.dataset['code'] = status.error.code;
      },
    },
  );
}

async function probe(): Promise<void> {
  const out = document.createElement('section');
  out.dataset['testid'] = 'baton-e2e';
  document.body.append(out);
  const line = (name: string, fields: Record<string, string>, text = '') => {
    const element = document.createElement('p');
    element.dataset['testid'] = name;
    Object.assign(element.dataset, fields);
    element.textContent = text;
    out.append(element);
  };

  // The popup's messages are for the extension's pages: a content script gets no answer.
  const view = await browser.runtime.sendMessage({ type: 'view.get', data: null }).then(
    (reply: unknown) => (reply === undefined || reply === null ? 'none' : 'answered'),
    () => 'none',
  );
  line('fixed-message', { answer: view });

  const list = await batonApi.connections();
  line('connections', { code: list.ok ? 'ok' : list.error.code });
  // The test may name a connection in the page's URL: the unlisted page asks for it all the same.
  const named = new URLSearchParams(location.search).get('connection');
  const ids = list.ok
    ? list.connections.filter((c) => c.status === 'connected').map((c) => c.id)
    : named === null
      ? []
      : [named];
  for (const connectionId of ids) {
    const me = await batonApi.request({ connectionId, method: 'GET', path: 'users.me' });
    const user = me.ok ? (me.body as { name?: unknown; email?: unknown }) : null;
    line(
      'user',
      {
        connectionId,
        code: me.ok ? String(me.status) : me.error.code,
        contentType: me.ok ? (me.headers['content-type'] ?? '') : '',
      },
      user === null ? '' : `${String(user.name)} <${String(user.email)}>`,
    );
  }
  const first = ids[0];
  if (list.ok && first !== undefined) {
    // The sandbox's echo route answers with what reached it: method, query and body went through.
    const echo = await batonApi.request({
      connectionId: first,
      method: 'POST',
      path: 'echo/e2e',
      query: { q: 'a b', tag: ['x', 'y'] },
      body: { hello: 'baton' },
    });
    const echoed = echo.ok ? (echo.body as { method?: string; query?: string; body?: string }) : {};
    line(
      'echo',
      { code: echo.ok ? String(echo.status) : echo.error.code },
      `${echoed.method} ?${echoed.query} ${echoed.body}`,
    );
    // The token endpoint is no API path: refused before it leaves.
    const refused = await batonApi.request({
      connectionId: first,
      method: 'GET',
      path: 'oauth2/access_token',
    });
    line('refused', { code: refused.ok ? String(refused.status) : refused.error.code });
  }
  out.dataset['state'] = 'done';
}
