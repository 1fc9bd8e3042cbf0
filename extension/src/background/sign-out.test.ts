import { describe, expect, it } from 'vitest';
import { lastViewItem } from '../state/last-view.ts';
import { createHarness, signedIn } from '../testing/harness.ts';

/**
 * Item 9 of issue 38: signing out must not leave a licence's record (local:lastView: names, e-mail
 * addresses) behind without a session, even when the worker is stopped between two writes.
 */
async function signedInWithKeptLicences() {
  const h = await signedIn();
  await h.send['view.refresh'](null);
  expect(await lastViewItem.getValue()).not.toBeNull();
  return h;
}

describe('session.signOut, as storage sees it', () => {
  it('forgets the kept licences in one write to storage.local', async () => {
    const h = await signedInWithKeptLicences();
    const from = h.writes.log.length;

    await h.send['session.signOut'](null);

    expect(h.writes.log.slice(from).filter((w) => w.startsWith('local.'))).toEqual([
      'local.remove lastView',
    ]);
    expect((await h.state.read()).session).toBeNull();
    expect(await lastViewItem.getValue()).toBeNull();
  });

  it('a refresh that starts while the session ends brings no licence back', async () => {
    const h = await signedInWithKeptLicences();
    // The broker cannot be told (signed out here only): it still answers with the token.
    h.broker.unreachable = true;
    const vaultWrite = h.writes.holdVault();
    const signingOut = h.send['session.signOut'](null);
    await vaultWrite.reached;
    h.broker.unreachable = false;

    // The list is gone, the token not yet: a refresh (the popup opening) reads it now.
    await h.send['view.refresh'](null);
    vaultWrite.release();
    await signingOut;
    await h.background.idle();

    expect(await lastViewItem.getValue()).toBeNull();
    expect(await h.view()).toMatchObject({ signedIn: false, connections: [] });
  });

  it.each([0, 1, 2, 3, 4, 5])(
    'a worker that dies after %i writes leaves the session, or nothing: never the licences alone',
    async (writes) => {
      const h = await signedInWithKeptLicences();
      h.writes.dieAfter(writes);

      await h.send['session.signOut'](null).catch(() => undefined);

      const stored = {
        session: (await h.state.read()).session !== null,
        licences: (await lastViewItem.getValue()) !== null,
      };
      expect(stored).toBeOneOf([
        { session: true, licences: true },
        { session: true, licences: false },
        { session: false, licences: false },
      ]);
      // The next start (the browser restarted: storage.session empty) shows a licence only with
      // a session.
      const view = await (await createHarness({ restart: true })).view();
      expect({ signedIn: view.signedIn, licences: view.connections.length > 0 }).toBeOneOf([
        { signedIn: true, licences: true },
        { signedIn: true, licences: false },
        { signedIn: false, licences: false },
      ]);
    },
  );
});
