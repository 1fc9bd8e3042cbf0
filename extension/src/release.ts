import { parseApiOrigins, type ApiOrigin } from './api-origins.ts';
import { parseBrokerUrl } from './broker-url.ts';

/** What a store build needs from its build variables, checked before anything is built. */
export interface ReleaseSettings {
  brokerUrl: string;
  geckoId: string;
  /** WXT_API_ORIGINS, https only (docs/extending.md); empty when unset. */
  apiOrigins: readonly ApiOrigin[];
}

/** A Firefox add-on id: an e-mail-like `name@domain`, or a `{GUID}`. */
const GECKO_ID = /^(?:[A-Za-z0-9._+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}|\{[0-9a-fA-F-]{36}\})$/;

/**
 * The release build's settings from its environment (BATON_RELEASE=1): WXT_BROKER_URL, an https
 * broker (a store build never talks to plain http), WXT_GECKO_ID, the id Mozilla knows the
 * add-on by, and WXT_API_ORIGINS, https only. Every problem is named at once; the build does not
 * start with any.
 */
export function releaseSettings(env: Record<string, string | undefined>): ReleaseSettings {
  const problems: string[] = [];
  const raw = env['WXT_BROKER_URL'];
  let brokerUrl = '';
  if (raw === undefined || raw.trim() === '') problems.push('WXT_BROKER_URL is required');
  else {
    const parsed = parseBrokerUrl(raw);
    if (!parsed.ok) problems.push(`WXT_BROKER_URL is not a valid broker URL (${parsed.problem})`);
    else if (!parsed.url.startsWith('https://'))
      problems.push('WXT_BROKER_URL must be https in a release build');
    else brokerUrl = parsed.url;
  }
  const geckoId = env['WXT_GECKO_ID']?.trim() ?? '';
  if (geckoId === '') problems.push('WXT_GECKO_ID (the Firefox add-on id) is required');
  else if (!GECKO_ID.test(geckoId))
    problems.push('WXT_GECKO_ID must be name@domain.tld or a {GUID}, as Mozilla accepts');
  const origins = parseApiOrigins(env['WXT_API_ORIGINS'], { release: true });
  if (!origins.ok) problems.push(...origins.problems.map((p) => `WXT_API_ORIGINS: ${p}`));
  if (problems.length > 0)
    throw new Error(`Cannot build a release:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
  return { brokerUrl, geckoId, apiOrigins: origins.ok ? origins.origins : [] };
}
