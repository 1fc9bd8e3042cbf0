import type { Config } from './types.ts';
import { BITS, prefixHolding, trustedAddresses } from './trusted-addresses.ts';
import { list, type Values } from './variables.ts';

const LOOPBACK = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|localhost)$/;

/** What would quietly weaken a deployment, or contradict itself: each named. */
export function refusals(
  values: Values,
  config: Config | undefined,
  production: boolean,
): string[] {
  const found: string[] = [];
  const refuse = (when: boolean, problem: string) => {
    if (when) found.push(problem);
  };
  const publicUrl = new URL(values.PUBLIC_URL);
  refuse(
    publicUrl.pathname !== '/' || publicUrl.search !== '' || publicUrl.hash !== '',
    'PUBLIC_URL must be an origin, with no path, query or fragment',
  );
  refuse(
    (values.EVENTS_WEBHOOK_URL === undefined) !== (values.EVENTS_WEBHOOK_SECRET === undefined),
    'EVENTS_WEBHOOK_URL and EVENTS_WEBHOOK_SECRET go together: set both or neither',
  );
  for (const [other, port] of [
    ['PORT', values.PORT],
    ['METRICS_PORT', values.METRICS_PORT],
  ] as const)
    refuse(
      values.ADMIN_PORT !== undefined && values.ADMIN_PORT !== 0 && values.ADMIN_PORT === port,
      `ADMIN_PORT must differ from ${other} (${port}): the admin API has a listener of its own`,
    );
  if (config)
    refuse(
      config.refresh.leaseMs <= config.refresh.tokenTimeoutMs,
      'REFRESH_LEASE_MS must be longer than TOKEN_TIMEOUT_MS',
    );
  if (!production) return found;
  refuse(publicUrl.protocol !== 'https:', 'PUBLIC_URL must be https in production');
  refuse(
    config?.provider.apiUrlAllowlist.some((entry) => entry.scheme !== 'https') === true,
    'API_URL_ALLOWLIST entries must be https in production',
  );
  refuse(
    values.TRUST_PROXY === 'true',
    'TRUST_PROXY=true trusts any client to set X-Forwarded-For past the rate limits: give the number of proxies in front (1) or their addresses',
  );
  const trust = implausibleTrust(values.TRUST_PROXY);
  if (trust !== undefined) found.push(trust);
  refuse(
    values.METRICS_PORT !== undefined &&
      values.METRICS_TOKEN === undefined &&
      !LOOPBACK.test(values.HOST),
    `METRICS_PORT would serve /metrics to anyone who reaches ${values.HOST}: set METRICS_TOKEN, or bind HOST to loopback`,
  );
  refuse(
    values.EVENTS_WEBHOOK_URL !== undefined &&
      new URL(values.EVENTS_WEBHOOK_URL).protocol !== 'https:',
    'EVENTS_WEBHOOK_URL must be https in production',
  );
  return found;
}

/** More proxies than any real deployment chains in front of one service. */
const MAX_PROXY_HOPS = 10;
/**
 * More addresses than a range this wide, all entries together, are not a deployment's proxies
 * (10.0.0.0/8 and the IPv6 unique local fc00::/7 are the widest private ranges): they are most of
 * the Internet.
 */
const NARROWEST_TRUST = { 4: 8, 6: 7 } as const;

/**
 * Why a TRUST_PROXY value would let clients choose their own address (past the rate limits), or
 * undefined: a hop count beyond any real chain of proxies, an entry proxy-addr cannot read, or
 * more addresses, all entries together, than a network's proxies.
 */
function implausibleTrust(value: string | undefined): string | undefined {
  if (value === undefined || value === 'true' || value === 'false') return undefined;
  if (/^\d+$/.test(value))
    return Number(value) > MAX_PROXY_HOPS
      ? `TRUST_PROXY=${value} trusts more proxies than any deployment has: give the number in front (1 behind one load balancer), at most ${MAX_PROXY_HOPS}`
      : undefined;
  const trusted = trustedAddresses(list(value));
  if (typeof trusted === 'string')
    return `TRUST_PROXY=${value} names ${trusted}, which is not an address, a subnet (CIDR or dotted netmask), loopback, linklocal or uniquelocal`;
  for (const family of [4, 6] as const) {
    const widest = 2n ** BigInt(BITS[family] - NARROWEST_TRUST[family]);
    if (trusted[family] > widest)
      return `TRUST_PROXY=${value} trusts as many IPv${family} addresses as a /${prefixHolding(trusted[family], family)} (its entries together), wider than any network's proxies (IPv4 /${NARROWEST_TRUST[4]}, IPv6 /${NARROWEST_TRUST[6]} at the widest): name your proxies' addresses or subnets`;
  }
  return undefined;
}
