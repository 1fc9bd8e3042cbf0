import { describe, expect, it } from 'vitest';
import { changeSubscriber } from './api-client.ts';
import { API_CHANGES_PORT, type ApiChange, type ApiChangeStatus } from './api.ts';
import { delivered, portPair, type FakePort } from './testing/fake-port.ts';

/**
 * `batonApi.onChange` against a background played by the test: it holds the far end of each port
 * the client opens, and says what the real one would (background/api-changes.test.ts shows that
 * it does).
 */
function setUp(options: { refuseConnect?: boolean } = {}) {
  const backgroundEnds: FakePort[] = [];
  const names: string[] = [];
  const onChange = changeSubscriber(({ name }) => {
    if (options.refuseConnect === true) throw new Error('Extension context invalidated.');
    names.push(name);
    const pair = portPair(name, {});
    backgroundEnds.push(pair.background);
    return pair.page;
  });
  const changes: ApiChange[] = [];
  const statuses: ApiChangeStatus[] = [];
  const stop = onChange((change) => changes.push(change), {
    onStatus: (status) => statuses.push(status),
  });
  /** The background end of the port opened last. */
  const background = () => backgroundEnds.at(-1)!;
  return { backgroundEnds, names, changes, statuses, stop, background };
}

const removed: ApiChange = {
  kind: 'removed',
  connectionId: 'conn-a',
  apiOrigin: 'https://api.provider.example',
};

describe('batonApi.onChange', () => {
  it('opens the changes port, says it listens once the background accepts, and passes each change on, in order', async () => {
    const t = setUp();
    t.background().postMessage({ type: 'api.listening' });
    t.background().postMessage({ type: 'api.change', change: removed });
    t.background().postMessage({ type: 'api.change', change: { kind: 'signed_out' } });
    await delivered();

    expect(t.names).toEqual([API_CHANGES_PORT]);
    expect(t.statuses).toEqual([{ state: 'listening' }]);
    expect(t.changes).toEqual([removed, { kind: 'signed_out' }]);
  });

  it('when refused (an origin not listed), says why and stops: no change, no new port', async () => {
    const t = setUp();
    t.background().postMessage({
      type: 'api.refused',
      error: { code: 'origin_not_allowed', message: 'not listed' },
    });
    t.background().disconnect();
    await delivered();

    expect(t.statuses).toEqual([
      { state: 'stopped', error: { code: 'origin_not_allowed', message: 'not listed' } },
    ]);
    expect(t.backgroundEnds).toHaveLength(1);
  });

  it('when the background stops (an idle service worker), connects again and goes on, without saying so twice', async () => {
    const t = setUp();
    t.background().postMessage({ type: 'api.listening' });
    await delivered();
    t.background().disconnect();
    await delivered();
    t.background().postMessage({ type: 'api.listening' });
    t.background().postMessage({ type: 'api.change', change: removed });
    await delivered();

    expect(t.backgroundEnds).toHaveLength(2);
    expect(t.statuses).toEqual([{ state: 'listening' }]);
    expect(t.changes).toEqual([removed]);
  });

  it('when a port closes before the background accepted it, stops with no_answer rather than try again', async () => {
    const t = setUp();
    t.background().disconnect();
    await delivered();

    expect(t.backgroundEnds).toHaveLength(1);
    expect(t.statuses).toEqual([
      { state: 'stopped', error: expect.objectContaining({ code: 'no_answer' }) },
    ]);
  });

  it('when the extension is gone (reloaded under the page), stops with no_answer', () => {
    const t = setUp({ refuseConnect: true });

    expect(t.statuses).toEqual([
      { state: 'stopped', error: expect.objectContaining({ code: 'no_answer' }) },
    ]);
  });

  it('ignores what is not one of its messages', async () => {
    const t = setUp();
    t.background().postMessage({ type: 'api.listening' });
    t.background().postMessage({ type: 'api.change' });
    t.background().postMessage('hello');
    t.background().postMessage({ type: 'api.refused', error: 'nope' });
    await delivered();

    expect(t.changes).toEqual([]);
    expect(t.statuses).toEqual([{ state: 'listening' }]);
  });

  it('the function it returns closes the port, and nothing more is heard', async () => {
    const t = setUp();
    t.background().postMessage({ type: 'api.listening' });
    await delivered();

    t.stop();
    await delivered();

    expect(t.background().open).toBe(false);
    expect(t.backgroundEnds).toHaveLength(1);
    expect(t.statuses).toEqual([{ state: 'listening' }]);
  });
});
