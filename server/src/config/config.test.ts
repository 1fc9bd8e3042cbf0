import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../config/config.ts';

const WHSEC_OLD = `whsec_${Buffer.alloc(32, 1).toString('base64')}`;
const WHSEC_NEW = `whsec_${Buffer.alloc(24, 2).toString('base64')}`;

const key = (byte: number) => Buffer.alloc(32, byte).toString('base64');
const production = {
  NODE_ENV: 'production',
  AUTH_URL: 'https://auth.example.com',
  CLIENT_ID: 'client',
  CLIENT_SECRET: 'secret',
  PUBLIC_URL: 'https://broker.example.com',
  API_URL_ALLOWLIST: 'https://*.api.example.com',
  EXTENSION_REDIRECT_URLS: 'https://abcdefghijklmnopabcdefghijklmnop.chromiumapp.org/',
  SESSION_SECRET: 'x'.repeat(32),
  TOKEN_ENCRYPTION_KEYS: `k1:${key(1)}`,
  REDIS_URL: 'redis://redis:6379',
};

const problems = (env: Record<string, string | undefined>): string[] => {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  return [];
};

describe('loadConfig', () => {
  it('reads a complete production environment', () => {
    const config = loadConfig(production);
    expect(config.production).toBe(true);
    expect(config.provider.redirectUri).toBe('https://broker.example.com/auth/callback');
    expect(config.developmentDefaults).toEqual([]);
    expect(config.refresh.aheadMs).toBe(300_000);
    expect(config.listen.port).toBe(8787);
    expect(config.listen.host).toBe('127.0.0.1');
    expect(config.refresh.tokenTimeoutMs).toBe(10_000);
    expect(config.refresh.leaseMs).toBe(15_000);
  });

  it('reads the token timeout and the refresh lease, the lease 5 s longer unless given', () => {
    expect(loadConfig({ ...production, TOKEN_TIMEOUT_MS: '1500' })).toMatchObject({
      refresh: { tokenTimeoutMs: 1500, leaseMs: 6500 },
    });
    expect(
      loadConfig({ ...production, TOKEN_TIMEOUT_MS: '1500', REFRESH_LEASE_MS: '4000' }),
    ).toMatchObject({ refresh: { tokenTimeoutMs: 1500, leaseMs: 4000 } });
  });

  it('falls back to a development setup outside production, and says which values it used', () => {
    const config = loadConfig({});
    expect(config.production).toBe(false);
    expect(config.provider.authUrl).toBe('http://127.0.0.1:8788');
    expect(config.redis.topology).toBeUndefined();
    expect(config.developmentDefaults).toContain('CLIENT_SECRET');
    expect(config.developmentDefaults).toContain('REDIS_URL (embedded store)');
  });

  it('names every missing variable in production at once, the embedded store included', () => {
    const found = problems({ NODE_ENV: 'production' });
    for (const name of Object.keys(production).filter(
      (name) => name !== 'NODE_ENV' && name !== 'REDIS_URL',
    )) {
      expect(found.join('\n')).toContain(`${name} is required`);
    }
    expect(found).toContainEqual(
      expect.stringMatching(/^REDIS_URL, REDIS_SENTINEL or REDIS_CLUSTER_NODES is required/),
    );
  });

  describe('Redis', () => {
    const noRedis = { ...production, REDIS_URL: undefined };

    it('a standalone server, cached and not waiting for replicas by default', () => {
      expect(loadConfig(production)).toMatchObject({
        redis: {
          topology: { mode: 'standalone', url: 'redis://redis:6379' },
          cacheEntries: 10_000,
          waitReplicas: 0,
        },
      });
    });

    it('a Sentinel set: the master name and its sentinels, waiting for one replica by default', () => {
      const config = loadConfig({
        ...noRedis,
        REDIS_SENTINEL: 'baton@sentinel-1:26379, sentinel-2:26379,[::1]:26380',
        REDIS_PASSWORD: 'data-password',
      });
      expect(config.redis.topology).toEqual({
        mode: 'sentinel',
        masterName: 'baton',
        sentinels: [
          { host: 'sentinel-1', port: 26379 },
          { host: 'sentinel-2', port: 26379 },
          { host: '::1', port: 26380 },
        ],
        username: undefined,
        password: 'data-password',
        sentinelPassword: undefined,
      });
      expect(config.redis.waitReplicas).toBe(1);
      expect(
        loadConfig({ ...noRedis, REDIS_SENTINEL: 'b@s:1', REDIS_WAIT_REPLICAS: '0' }).redis
          .waitReplicas,
      ).toBe(0);
    });

    it('a Cluster: some of its nodes', () => {
      expect(
        loadConfig({ ...noRedis, REDIS_CLUSTER_NODES: 'redis://a:7000,redis://b:7001' }).redis
          .topology,
      ).toMatchObject({ mode: 'cluster', nodes: ['redis://a:7000', 'redis://b:7001'] });
    });

    it('names a malformed setting, and more than one place', () => {
      expect(problems({ ...noRedis, REDIS_SENTINEL: 'sentinel-1:26379' })).toEqual([
        'REDIS_SENTINEL must be master-name@host:port[,host:port…]',
      ]);
      expect(problems({ ...noRedis, REDIS_SENTINEL: 'baton@sentinel-1' })).toEqual([
        'REDIS_SENTINEL has a sentinel address that is not host:port: sentinel-1',
      ]);
      expect(problems({ ...noRedis, REDIS_CLUSTER_NODES: 'http://a:7000' })).toEqual([
        'REDIS_CLUSTER_NODES must be redis://host:port URLs: http://a:7000',
      ]);
      expect(problems({ ...production, REDIS_CLUSTER_NODES: 'redis://a:7000' })).toEqual([
        'REDIS_URL and REDIS_CLUSTER_NODES: set only one of them',
      ]);
    });
  });

  it.each([
    ['PUBLIC_URL', { PUBLIC_URL: 'http://broker.example.com' }, 'PUBLIC_URL must be https'],
    ['the allowlist', { API_URL_ALLOWLIST: 'http://api.example.com' }, 'must be https'],
    ['a short session secret', { SESSION_SECRET: 'short' }, 'SESSION_SECRET'],
    [
      'a short key',
      { TOKEN_ENCRYPTION_KEYS: `k1:${key(1).slice(0, 20)}` },
      'TOKEN_ENCRYPTION_KEYS',
    ],
    ['a bad port', { PORT: '99999' }, 'PORT'],
    ['a bad Redis URL', { REDIS_URL: 'http://redis' }, 'REDIS_URL'],
    ['a token timeout that is not a number', { TOKEN_TIMEOUT_MS: 'soon' }, 'TOKEN_TIMEOUT_MS'],
    [
      'a refresh lease no longer than the token timeout',
      { TOKEN_TIMEOUT_MS: '2000', REFRESH_LEASE_MS: '2000' },
      'REFRESH_LEASE_MS must be longer than TOKEN_TIMEOUT_MS',
    ],
    [
      'an extension redirect that is not exact',
      { EXTENSION_REDIRECT_URLS: 'https://abcdefghijklmnopabcdefghijklmnop.chromiumapp.org' },
      'EXTENSION_REDIRECT_URLS',
    ],
  ])('refuses %s', (_name, override, message) => {
    expect(problems({ ...production, ...override }).join('\n')).toContain(message);
  });

  it('rotates session secrets and encryption keys: first signs or encrypts, all verify', () => {
    const config = loadConfig({
      ...production,
      SESSION_SECRET: `${'a'.repeat(32)},${'b'.repeat(32)}`,
      TOKEN_ENCRYPTION_KEYS: `new:${key(2)},old:${key(1)}`,
    });
    expect(config.sessionSecrets).toHaveLength(2);
    expect(config.keyring.activeKid).toBe('new');
    expect([...config.keyring.keys.keys()]).toEqual(['new', 'old']);
  });
});

describe('loadConfig: operations settings', () => {
  it('defaults: no shutdown delay, a 10 s drain, no metrics, no events', () => {
    expect(loadConfig(production)).toMatchObject({
      shutdown: { delayMs: 0, timeoutMs: 10_000 },
      metrics: { token: undefined, port: undefined },
      events: { webhook: undefined },
    });
  });

  it('reads them', () => {
    const config = loadConfig({
      ...production,
      SHUTDOWN_DELAY_MS: '5000',
      SHUTDOWN_TIMEOUT_MS: '20000',
      METRICS_TOKEN: 'm'.repeat(32),
      METRICS_PORT: '9464',
      EVENTS_WEBHOOK_URL: 'https://hooks.example.com/baton',
      EVENTS_WEBHOOK_SECRET: `${WHSEC_OLD}, ${WHSEC_NEW}`,
    });
    expect(config).toMatchObject({
      shutdown: { delayMs: 5000, timeoutMs: 20_000 },
      metrics: { token: 'm'.repeat(32), port: 9464 },
      events: {
        webhook: {
          url: 'https://hooks.example.com/baton',
          secrets: [Buffer.alloc(32, 1), Buffer.alloc(24, 2)],
        },
      },
    });
  });

  it.each([
    ['a plain string', 's'.repeat(40)],
    ['too few bytes', `whsec_${Buffer.alloc(16).toString('base64')}`],
    ['not base64', 'whsec_not base64!'],
    ['one bad secret of two', `${WHSEC_OLD},whsec_`],
  ])('refuses a webhook secret that is %s', (_label, secret) => {
    expect(
      problems({
        ...production,
        EVENTS_WEBHOOK_URL: 'https://hooks.example.com/',
        EVENTS_WEBHOOK_SECRET: secret,
      }),
    ).toEqual([expect.stringMatching(/^EVENTS_WEBHOOK_SECRET must be whsec_ and the base64/)]);
  });

  it('names a short metrics token, a webhook without its secret, and an http webhook', () => {
    expect(problems({ ...production, METRICS_TOKEN: 'short' })).toEqual([
      'METRICS_TOKEN must be at least 32 characters',
    ]);
    expect(problems({ ...production, EVENTS_WEBHOOK_URL: 'https://hooks.example.com/' })).toEqual([
      'EVENTS_WEBHOOK_URL and EVENTS_WEBHOOK_SECRET go together: set both or neither',
    ]);
    expect(
      problems({
        ...production,
        EVENTS_WEBHOOK_URL: 'http://hooks.example.com/',
        EVENTS_WEBHOOK_SECRET: WHSEC_OLD,
      }),
    ).toEqual(['EVENTS_WEBHOOK_URL must be https in production']);
    // The scheme as URL parsing reads it, whatever its case.
    expect(
      problems({
        ...production,
        EVENTS_WEBHOOK_URL: 'HTTP://hooks.example.com/',
        EVENTS_WEBHOOK_SECRET: WHSEC_OLD,
      }),
    ).toEqual(['EVENTS_WEBHOOK_URL must be https in production']);
  });

  describe('refuses what would quietly weaken a deployment', () => {
    it('a partial set of secrets outside production, naming what is missing', () => {
      const found = problems({ CLIENT_SECRET: 'a-real-secret' });
      expect(found).toEqual([
        expect.stringMatching(/^SESSION_SECRET is required once CLIENT_SECRET is set/),
        expect.stringMatching(/^TOKEN_ENCRYPTION_KEYS is required once CLIENT_SECRET is set/),
      ]);
      expect(problems({})).toEqual([]);
      expect(
        problems({
          CLIENT_SECRET: 'a-real-secret',
          SESSION_SECRET: 'y'.repeat(32),
          TOKEN_ENCRYPTION_KEYS: `k1:${key(1)}`,
        }),
      ).toEqual([]);
    });

    it('TRUST_PROXY=true in production, while a hop count or addresses pass', () => {
      expect(problems({ ...production, TRUST_PROXY: 'true' })).toEqual([
        expect.stringMatching(/^TRUST_PROXY=true trusts any client/),
      ]);
      expect(problems({ ...production, TRUST_PROXY: '1' })).toEqual([]);
      expect(problems({ ...production, TRUST_PROXY: '10.0.0.0/8' })).toEqual([]);
      expect(problems({ ...production, TRUST_PROXY: 'loopback, 10.0.0.0/8, fd00::/8' })).toEqual(
        [],
      );
    });

    it.each([
      ['a /8 in two halves', '10.0.0.0/9, 10.128.0.0/9'],
      ['a /8 and a subnet inside it', '10.0.0.0/8, 10.1.0.0/16'],
      ['a /8 as a dotted netmask', '10.0.0.0/255.0.0.0'],
      ['a /8 written as IPv4-mapped IPv6', '::ffff:10.0.0.0/104'],
      ['the IPv6 unique local /7, and IPv4-mapped single addresses', 'fc00::/7, ::ffff:10.0.0.1'],
    ])('TRUST_PROXY trusting %s in production', (_name, value) => {
      expect(problems({ ...production, TRUST_PROXY: value })).toEqual([]);
    });

    it.each([
      ['every IPv4 and IPv6 address', '0.0.0.0/0,::/0'],
      ['every IPv4 address', '10.0.0.1, 0.0.0.0/0'],
      ['half of IPv4', '0.0.0.0/1'],
      ['every IPv6 address', '::/0'],
      ['every IPv4 address, as IPv4-mapped IPv6', '::ffff:0:0/96'],
      ['every IPv4 address, in two dotted-netmask halves', '0.0.0.0/128.0.0.0,128.0.0.0/128.0.0.0'],
      ['half of IPv4, as a dotted netmask', '0.0.0.0/128.0.0.0'],
      ['every IPv4 address, in two IPv4-mapped halves', '::ffff:0.0.0.0/97, ::ffff:128.0.0.0/97'],
      ['an IPv6 /80 that holds every IPv4-mapped address', '::/80'],
      ['two /8, wider than one in all', '11.0.0.0/8, 12.0.0.0/8'],
      ['a name that is no address', '10.0.0.0/8, proxies.internal'],
      ['an implausible hop count', '99'],
      ['eleven hops', '11'],
    ])('TRUST_PROXY trusting %s in production', (_name, value) => {
      expect(problems({ ...production, TRUST_PROXY: value })).toEqual([
        expect.stringMatching(/^TRUST_PROXY=/),
      ]);
    });

    it('an open metrics port in production, unless on loopback or behind a token', () => {
      expect(problems({ ...production, HOST: '0.0.0.0', METRICS_PORT: '9464' })).toEqual([
        expect.stringMatching(/^METRICS_PORT would serve \/metrics to anyone/),
      ]);
      expect(problems({ ...production, METRICS_PORT: '9464' })).toEqual([]);
      expect(
        problems({
          ...production,
          HOST: '0.0.0.0',
          METRICS_PORT: '9464',
          METRICS_TOKEN: 'm'.repeat(32),
        }),
      ).toEqual([]);
    });
  });

  describe('secrets from files (NAME_FILE), as Docker and Kubernetes mount them', () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-config-'));
    const file = (name: string, content: string) => {
      const path = join(dir, name);
      writeFileSync(path, content);
      return path;
    };
    const secrets = new Set(['CLIENT_SECRET', 'SESSION_SECRET', 'TOKEN_ENCRYPTION_KEYS']);
    const rest = Object.fromEntries(
      Object.entries(production).filter(([name]) => !secrets.has(name)),
    );

    it('reads each secret from its file, less a trailing newline', () => {
      const config = loadConfig({
        ...rest,
        CLIENT_SECRET_FILE: file('client', 'from-a-file\n'),
        SESSION_SECRET_FILE: file('session', `${'s'.repeat(40)}\n`),
        TOKEN_ENCRYPTION_KEYS_FILE: file('keys', `k9:${key(9)}\n`),
        METRICS_TOKEN_FILE: file('metrics', 'm'.repeat(32)),
      });
      expect(config.provider.clientSecret).toBe('from-a-file');
      expect(config.sessionSecrets).toEqual(['s'.repeat(40)]);
      expect(config.keyring.activeKid).toBe('k9');
      expect(config.metrics.token).toBe('m'.repeat(32));
    });

    it('refuses a secret set both ways, and names a file that cannot be read', () => {
      expect(problems({ ...production, CLIENT_SECRET_FILE: file('both', 'x') })).toContainEqual(
        'CLIENT_SECRET and CLIENT_SECRET_FILE are both set: set one of them',
      );
      expect(
        problems({
          ...production,
          SESSION_SECRET: undefined,
          SESSION_SECRET_FILE: join(dir, 'none'),
        }),
      ).toContainEqual(
        expect.stringMatching(/^SESSION_SECRET_FILE names a file that cannot be read \(ENOENT\)/),
      );
    });

    it('counts a secret from a file as given, so the development fallbacks stay off', () => {
      expect(problems({ CLIENT_SECRET_FILE: file('alone', 'x') })).toEqual([
        expect.stringMatching(/^SESSION_SECRET is required once CLIENT_SECRET is set/),
        expect.stringMatching(/^TOKEN_ENCRYPTION_KEYS is required once CLIENT_SECRET is set/),
      ]);
    });
  });
});
