import { request, type Dispatcher } from 'undici';
import { CLIENT_ID, CLIENT_SECRET } from './broker-env.ts';

export interface Grant {
  accessToken: string;
  refreshToken: string;
  /** Epoch ms: when the access token ends, from `expires_in`. */
  expiresAt: number;
}

/**
 * A fresh grant at the sandbox as the broker would get one, without a browser: the authorization
 * page answered by scripted consent (set for the license beforehand), then the code exchange at
 * the license's `api_url` (`grant_type=auth_code`), with the tests' one client.
 */
export async function sandboxGrant(options: {
  providerUrl: string;
  apiUrl: string;
  redirectUri: string;
  dispatcher: Dispatcher;
}): Promise<Grant> {
  const { redirectUri, dispatcher } = options;
  const authorize = new URL(`${options.providerUrl}/nl/api/oauth2/authorize`);
  authorize.search = new URLSearchParams({
    client_id: CLIENT_ID,
    response_type: 'code',
    redirect_uri: redirectUri,
  }).toString();
  const answer = await request(authorize, { dispatcher });
  await answer.body.dump();
  const code = new URL(String(answer.headers.location)).searchParams.get('code');
  if (code === null) throw new Error(`authorize answered ${answer.statusCode} without a code`);
  const issued = Date.now();
  const token = await request(`${options.apiUrl}/oauth2/access_token`, {
    method: 'POST',
    dispatcher,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'auth_code',
      code,
      redirect_uri: redirectUri,
      client_id: CLIENT_ID,
      client_secret: CLIENT_SECRET,
    }).toString(),
  });
  if (token.statusCode !== 200) throw new Error(`code exchange: ${token.statusCode}`);
  const body = (await token.body.json()) as {
    access_token: string;
    refresh_token: string;
    expires_in: number;
  };
  return {
    accessToken: body.access_token,
    refreshToken: body.refresh_token,
    expiresAt: issued + body.expires_in * 1000,
  };
}
