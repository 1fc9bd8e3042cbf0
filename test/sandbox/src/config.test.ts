import { describe, expect, it } from 'vitest';
import { loadConfig } from './config.ts';
import { DEV_CLIENT } from './state.ts';

describe('loadConfig (the start script environment)', () => {
  it('defaults to 127.0.0.1:8788, control off, and the development client, saying so', () => {
    expect(loadConfig({})).toEqual({
      port: 8788,
      host: '127.0.0.1',
      control: false,
      client: DEV_CLIENT,
      developmentDefaults: ['SANDBOX_CLIENT_ID', 'SANDBOX_CLIENT_SECRET', 'SANDBOX_REDIRECT_URIS'],
    });
  });

  it('reads every variable', () => {
    const config = loadConfig({
      SANDBOX_PORT: '0',
      SANDBOX_HOST: '0.0.0.0',
      SANDBOX_CONTROL: '1',
      SANDBOX_CLIENT_ID: 'baton-ci',
      SANDBOX_CLIENT_SECRET: 'sbx_secret_ci',
      SANDBOX_REDIRECT_URIS: 'http://127.0.0.1:1/cb, https://broker.example/auth/callback',
      SANDBOX_PUBLIC_URL: 'http://sandbox.internal:8788',
      SANDBOX_REQUEST_LOG_LIMIT: '5000',
    });
    expect(config).toMatchObject({
      port: 0,
      host: '0.0.0.0',
      control: true,
      client: {
        client_id: 'baton-ci',
        client_secret: 'sbx_secret_ci',
        redirect_uris: ['http://127.0.0.1:1/cb', 'https://broker.example/auth/callback'],
      },
      publicUrl: 'http://sandbox.internal:8788',
      requestLogLimit: 5000,
      developmentDefaults: [],
    });
  });

  it('names every invalid variable at once', () => {
    expect(() =>
      loadConfig({
        SANDBOX_PORT: 'http',
        SANDBOX_CONTROL: 'yes',
        SANDBOX_REDIRECT_URIS: 'nope',
        SANDBOX_REQUEST_LOG_LIMIT: '0',
      }),
    ).toThrow(
      /SANDBOX_PORT[\s\S]*SANDBOX_CONTROL[\s\S]*SANDBOX_REDIRECT_URIS[\s\S]*SANDBOX_REQUEST_LOG_LIMIT/,
    );
  });
});
