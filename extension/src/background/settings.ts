import { hostPermissionFor, parseBrokerUrl } from '../broker-url.ts';
import { effectiveSettings, managedFields } from '../managed.ts';
import type { SettingsChange, SettingsSaveResult, SettingsView } from '../messaging.ts';
import type { PersistedState } from '../state/persisted.ts';
import type { BackgroundCore, BackgroundDeps } from './core.ts';

/**
 * What the settings take from the core, and of the injected effects: the build's broker, the
 * redirect URL the options page shows, and the host permission check.
 */
export type SettingsCore = Pick<
  BackgroundCore,
  'state' | 'view' | 'log' | 'managed' | 'brokerUrlOf' | 'withState' | 'newEpoch' | 'refresh'
> & {
  readonly deps: Pick<BackgroundDeps, 'buildBrokerUrl' | 'hasHostPermission'> & {
    readonly identity: Pick<BackgroundDeps['identity'], 'getRedirectURL'>;
  };
};

/**
 * The options page's settings: read with what the page must show (which of them the organisation
 * holds), and saved with checks. A setting the organisation holds cannot be changed here.
 */
export function createSettings(core: SettingsCore) {
  const { deps, state, view } = core;

  async function settingsView(s: PersistedState): Promise<SettingsView> {
    const brokerUrl = core.brokerUrlOf(s);
    return {
      brokerUrl,
      defaultBrokerUrl: deps.buildBrokerUrl,
      locale: effectiveSettings(s.settings, core.managed()).locale,
      managed: managedFields(core.managed()),
      redirectUrl: deps.identity.getRedirectURL(),
      hostPermissionGranted: await deps.hasHostPermission(hostPermissionFor(brokerUrl)),
    };
  }

  async function saveSettings(change: SettingsChange): Promise<SettingsSaveResult> {
    const held = managedFields(core.managed());
    if (
      (change.brokerUrl !== undefined && held.brokerUrl) ||
      (change.locale !== undefined && held.locale)
    ) {
      core.log('settings.refused', { reason: 'managed' });
      return { ok: false, problem: 'managed' };
    }
    let brokerUrl: string | null | undefined = undefined;
    if (change.brokerUrl !== undefined && change.brokerUrl !== null) {
      const parsed = parseBrokerUrl(change.brokerUrl);
      if (!parsed.ok) return { ok: false, problem: parsed.problem };
      if (!(await deps.hasHostPermission(hostPermissionFor(parsed.url)))) {
        return { ok: false, problem: 'permission_missing' };
      }
      brokerUrl = parsed.url === deps.buildBrokerUrl ? null : parsed.url;
    } else if (change.brokerUrl === null) {
      brokerUrl = null;
    }
    const before = await state.read();
    const after = await state.update((s) => ({
      ...s,
      settings: {
        brokerUrl: brokerUrl === undefined ? s.settings.brokerUrl : brokerUrl,
        locale: change.locale === undefined ? s.settings.locale : change.locale,
      },
      // A default set here is the user's latest choice: it is offered first from now on.
      lastSignInLocale: change.locale === undefined ? s.lastSignInLocale : null,
    }));
    const brokerChanged = core.brokerUrlOf(before) !== core.brokerUrlOf(after);
    if (brokerChanged) core.newEpoch();
    await view.update((v) => ({
      ...core.withState(v, after),
      ...(brokerChanged && {
        connections: [],
        notice: null,
        sync: { status: 'idle', problem: null, at: null },
      }),
    }));
    core.log('settings.saved', { broker_changed: brokerChanged });
    if (brokerChanged) void core.refresh();
    return { ok: true, settings: await settingsView(after) };
  }

  return { view: settingsView, save: saveSettings };
}
