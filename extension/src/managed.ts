import { LOCALES, type Locale } from '@baton/shared';
import { parseBrokerUrl } from './broker-url.ts';
import type { Settings } from './state/persisted.ts';

/**
 * Settings an organisation enforces through the browser's managed storage (`storage.managed`:
 * Chrome's policy for the extension, described by `managed_schema.json`; Firefox's enterprise
 * policy "3rdparty" or a managed-storage manifest). docs/administrators.md says how to set them.
 *
 * A managed value wins over the user's; a value that is not valid is ignored (and named in
 * `ignored`, for the log) rather than trusted or turned into an error the user cannot fix.
 */
export interface ManagedSettings {
  readonly brokerUrl: string | null;
  readonly locale: Locale | null;
  /**
   * Minutes between two status checks (background/status-check.ts), 1 to 1440; 0 turns the check
   * off; null: not set (every 30 minutes).
   */
  readonly statusCheckMinutes: number | null;
}

export const NOT_MANAGED: ManagedSettings = {
  brokerUrl: null,
  locale: null,
  statusCheckMinutes: null,
};

/** The policy's keys, as `managed_schema.json` names them. */
export const MANAGED_KEYS = ['brokerUrl', 'locale', 'statusCheckMinutes'] as const;

/** The longest period a policy may set: once a day. */
export const MAX_STATUS_CHECK_MINUTES = 1440;

export function parseManaged(raw: unknown): {
  readonly settings: ManagedSettings;
  readonly ignored: readonly string[];
} {
  const record: Record<string, unknown> =
    typeof raw === 'object' && raw !== null && !Array.isArray(raw)
      ? (raw as Record<string, unknown>)
      : {};
  const ignored: string[] = [];
  let brokerUrl: string | null = null;
  if (record['brokerUrl'] !== undefined) {
    const parsed =
      typeof record['brokerUrl'] === 'string' ? parseBrokerUrl(record['brokerUrl']) : null;
    if (parsed?.ok) brokerUrl = parsed.url;
    else ignored.push('brokerUrl');
  }
  let locale: Locale | null = null;
  if (record['locale'] !== undefined) {
    const value = record['locale'];
    if (typeof value === 'string' && (LOCALES as readonly string[]).includes(value)) {
      locale = value as Locale;
    } else ignored.push('locale');
  }
  let statusCheckMinutes: number | null = null;
  if (record['statusCheckMinutes'] !== undefined) {
    const value = record['statusCheckMinutes'];
    if (
      typeof value === 'number' &&
      Number.isInteger(value) &&
      value >= 0 &&
      value <= MAX_STATUS_CHECK_MINUTES
    ) {
      statusCheckMinutes = value;
    } else ignored.push('statusCheckMinutes');
  }
  return { settings: { brokerUrl, locale, statusCheckMinutes }, ignored };
}

/** What is in force: the organisation's value, else the user's (null: the build's or automatic). */
export function effectiveSettings(user: Settings, managed: ManagedSettings): Settings {
  return {
    brokerUrl: managed.brokerUrl ?? user.brokerUrl,
    locale: managed.locale ?? user.locale,
  };
}

/** Which settings the organisation holds: the options page locks these. */
export function managedFields(managed: ManagedSettings): { brokerUrl: boolean; locale: boolean } {
  return { brokerUrl: managed.brokerUrl !== null, locale: managed.locale !== null };
}
