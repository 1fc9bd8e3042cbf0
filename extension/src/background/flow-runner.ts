import type { Locale } from '@baton/shared';
import { ProblemError, toProblem } from '../problems.ts';
import type { FlowState } from '../state/view.ts';
import { upsertConnection } from './connection-views.ts';
import type { BackgroundCore, BackgroundDeps } from './core.ts';
import { authStartUrl, createPkce, launchFailure, readFinalRedirect } from './flow.ts';

/**
 * What the flow takes from the core, and of the injected effects: the browser's auth window, the
 * PKCE verifier and the keep-alive.
 */
export type FlowRunnerCore = Pick<
  BackgroundCore,
  | 'state'
  | 'view'
  | 'now'
  | 'log'
  | 'brokerUrlOf'
  | 'tokenOf'
  | 'clientFor'
  | 'withState'
  | 'requirePermission'
  | 'track'
  | 'newEpoch'
  | 'refresh'
> & { readonly deps: Pick<BackgroundDeps, 'identity' | 'createVerifier' | 'keepAlive'> };

/**
 * The authorization flow as the background runs it: PKCE, the broker's /auth/start in the
 * browser's auth window, the handoff redeemed at POST /session (joining the session there is),
 * the outcome written to the view. One flow at a time.
 */
export function createFlowRunner(core: FlowRunnerCore) {
  const { deps, state, view, now } = core;
  let activeFlow: FlowState | null = null;

  /** Single flight: while a flow runs, another start answers with the running one. */
  function startFlow(locale: Locale, reconnectId: string | null): Promise<FlowState> {
    if (activeFlow !== null) return Promise.resolve(activeFlow);
    const flowState: FlowState = { status: 'running', locale, reconnectId, startedAt: now() };
    activeFlow = flowState;
    const run = async () => {
      try {
        // The language chosen for this sign-in is the one offered first next time.
        const s = await state.update((current) => ({ ...current, lastSignInLocale: locale }));
        await view.update((v) => ({ ...core.withState(v, s), flow: flowState, notice: null }));
        return await runFlow(locale, reconnectId);
      } finally {
        // The flow is over once its outcome is in the view: another may start during the refresh.
        activeFlow = null;
      }
    };
    void core.track(run().then((connected) => (connected ? core.refresh() : undefined)));
    return Promise.resolve(flowState);
  }

  /** Runs one flow to its outcome, written to the view; true when a license was connected. */
  async function runFlow(locale: Locale, reconnectId: string | null): Promise<boolean> {
    const stopKeepAlive = deps.keepAlive?.() ?? (() => undefined);
    try {
      const before = await state.read();
      const brokerUrl = core.brokerUrlOf(before);
      await core.requirePermission(brokerUrl);
      const client = core.clientFor(brokerUrl);
      await client.ping();

      const redirectUri = deps.identity.getRedirectURL();
      // Said at once, rather than left to a window that may never come back (Firefox stays on
      // the broker's page when it refuses the redirect URL).
      if (!(await client.acceptsRedirect(redirectUri)))
        throw new ProblemError({ code: 'redirect_not_allowed', redirectUrl: redirectUri });
      const pkce = await createPkce(deps.createVerifier);
      let finalUrl: string | undefined;
      try {
        finalUrl = await deps.identity.launchWebAuthFlow(
          authStartUrl(brokerUrl, locale, redirectUri, pkce.challenge),
        );
      } catch (error) {
        throw new ProblemError({ code: launchFailure(error) }, { cause: error });
      }
      const handoff = readFinalRedirect(finalUrl, redirectUri);

      // Join the existing session, if any, so that every license ends up in one session.
      const existing = core.tokenOf(before);
      const created = await client.createSession(
        { handoff, code_verifier: pkce.verifier },
        existing,
      );
      const joined = existing !== null && created.session_token === existing;
      await state.update((s) => ({
        ...s,
        session: { sessionToken: created.session_token, brokerUrl },
      }));
      if (!joined) core.newEpoch();
      const current = await view.read();
      const reconnected = joined && current.connections.some((c) => c.id === created.connection.id);
      await view.update((v) => ({
        ...v,
        signedIn: true,
        notice: null,
        flow: { status: 'succeeded', connectionId: created.connection.id, reconnected, at: now() },
        connections: upsertConnection(joined ? v.connections : [], created.connection),
      }));
      core.log('flow.succeeded', { joined, reconnected });
      return true;
    } catch (error) {
      const problem = toProblem(error);
      core.log('flow.failed', { code: problem.code });
      await view.update((v) => ({
        ...v,
        flow: { status: 'failed', problem, reconnectId, at: now() },
      }));
      return false;
    } finally {
      stopKeepAlive();
    }
  }

  return { start: startFlow };
}
