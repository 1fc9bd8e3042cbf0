import { Writable } from 'node:stream';
import { MockAgent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../ops/logger.ts';
import { createProvider, ProviderError } from './provider.ts';

const API_URL = 'https://eu.api.example.test/licenses/1';
const TOKENS = {
  token_type: 'Bearer',
  expires_in: 3600,
  access_token: 'at-1',
  refresh_token: 'rt-1',
};

let agent: MockAgent;
afterEach(async () => {
  await agent.close();
});

/** A provider over a mock token endpoint that answers `reply` and keeps each form it was sent. */
function providerAnswering(reply: { status: number; body: string }) {
  agent = new MockAgent();
  agent.disableNetConnect();
  const forms: URLSearchParams[] = [];
  agent
    .get('https://eu.api.example.test')
    .intercept({
      path: '/licenses/1/oauth2/access_token',
      method: 'POST',
      body: (body) => {
        forms.push(new URLSearchParams(body));
        return true;
      },
    })
    .reply(reply.status, reply.body, { headers: { 'content-type': 'application/json' } })
    .persist();
  const provider = createProvider({
    clientId: 'client',
    clientSecret: 'secret',
    redirectUri: 'https://broker.example.test/auth/callback',
    dispatcher: agent,
    now: () => 1_000,
    timeoutMs: 1_000,
  });
  return { provider, forms };
}

describe('the token requests', () => {
  it('exchanges a code with grant_type auth_code (never authorization_code), as the provider requires', async () => {
    const { provider, forms } = providerAnswering({ status: 200, body: JSON.stringify(TOKENS) });
    await expect(provider.exchangeCode(API_URL, 'code-1')).resolves.toEqual({
      accessToken: 'at-1',
      refreshToken: 'rt-1',
      expiresAt: 1_000 + 3_600_000,
    });
    expect(Object.fromEntries(forms[0]!)).toEqual({
      grant_type: 'auth_code',
      code: 'code-1',
      redirect_uri: 'https://broker.example.test/auth/callback',
      client_id: 'client',
      client_secret: 'secret',
    });
  });

  it('refreshes with grant_type refresh_token', async () => {
    const { provider, forms } = providerAnswering({ status: 200, body: JSON.stringify(TOKENS) });
    await provider.refresh(API_URL, 'rt-0');
    expect(Object.fromEntries(forms[0]!)).toEqual({
      grant_type: 'refresh_token',
      refresh_token: 'rt-0',
      client_id: 'client',
      client_secret: 'secret',
    });
  });

  it('calls a 4xx a rejection', async () => {
    const { provider } = providerAnswering({ status: 400, body: '{"error":"invalid_grant"}' });
    await expect(provider.refresh(API_URL, 'rt-0')).rejects.toMatchObject({
      failure: 'rejected',
    } satisfies Partial<ProviderError>);
  });
});

describe('a token response the broker cannot use', () => {
  const TOKEN = 'at-must-never-be-logged';

  /** The log line the broker writes for `error` (as the code exchange does), as text. */
  function logged(error: unknown): string {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, callback) {
        lines.push(chunk.toString());
        callback();
      },
    });
    createLogger('info', sink).warn({ err: error }, 'code exchange failed');
    return lines.join('');
  }

  it.each([
    ['the bare token as text', TOKEN],
    ['JSON with the token unquoted', `{"token_type":"Bearer","access_token": ${TOKEN}}`],
    [
      'JSON with the token in a wrong field type',
      JSON.stringify({ ...TOKENS, access_token: [TOKEN] }),
    ],
    [
      'JSON with a token that is not printable',
      JSON.stringify({ ...TOKENS, access_token: `${TOKEN} x` }),
    ],
  ])('%s: lost, and neither the error nor its log line quotes the body', async (_name, body) => {
    const { provider } = providerAnswering({ status: 200, body });
    const error = await provider.exchangeCode(API_URL, 'code-1').catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ProviderError);
    expect(error).toMatchObject({ failure: 'lost' });
    const line = logged(error);
    expect(line).toContain('token response is not a valid token set');
    expect(line).not.toContain('at-must');
  });
});
