import { DEV_CLIENT, type SandboxClient } from './state.ts';

/** What `pnpm --filter @baton/sandbox start` runs with, read once from the environment. */
export interface SandboxConfig {
  port: number;
  host: string;
  control: boolean;
  client: SandboxClient;
  publicUrl?: string;
  /** SANDBOX_REQUEST_LOG_LIMIT: the request log keeps the latest this many (default all). */
  requestLogLimit?: number;
  /** Client fields that fell back to the development client, for a loud warning. */
  developmentDefaults: string[];
}

export class SandboxConfigError extends Error {
  override name = 'SandboxConfigError';
}

const list = (value: string): string[] =>
  value
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');

/** Every problem is named at once. */
export function loadConfig(env: Record<string, string | undefined>): SandboxConfig {
  const problems: string[] = [];
  const value = (name: string): string | undefined => (env[name] === '' ? undefined : env[name]);

  const rawPort = value('SANDBOX_PORT') ?? '8788';
  const port = Number(rawPort);
  if (!/^\d+$/.test(rawPort) || port > 65535)
    problems.push('SANDBOX_PORT must be an integer 0..65535');

  const rawControl = value('SANDBOX_CONTROL') ?? '0';
  if (rawControl !== '0' && rawControl !== '1') problems.push('SANDBOX_CONTROL must be 0 or 1');

  const developmentDefaults: string[] = [];
  const orDefault = (name: string, fallback: string): string => {
    const given = value(name);
    if (given === undefined) developmentDefaults.push(name);
    return given ?? fallback;
  };
  const client: SandboxClient = {
    client_id: orDefault('SANDBOX_CLIENT_ID', DEV_CLIENT.client_id),
    client_secret: orDefault('SANDBOX_CLIENT_SECRET', DEV_CLIENT.client_secret),
    redirect_uris: list(orDefault('SANDBOX_REDIRECT_URIS', DEV_CLIENT.redirect_uris.join(','))),
    name: DEV_CLIENT.name ?? 'Baton',
  };
  for (const uri of client.redirect_uris) {
    if (!URL.canParse(uri) || uri.includes('#'))
      problems.push(`SANDBOX_REDIRECT_URIS: not an absolute URL without fragment: ${uri}`);
  }
  if (client.redirect_uris.length === 0) problems.push('SANDBOX_REDIRECT_URIS must list a URL');

  const publicUrl = value('SANDBOX_PUBLIC_URL');
  if (publicUrl !== undefined && !/^https?:\/\//.test(publicUrl))
    problems.push('SANDBOX_PUBLIC_URL must be an http(s) URL');

  const rawLimit = value('SANDBOX_REQUEST_LOG_LIMIT');
  if (rawLimit !== undefined && !/^[1-9]\d{0,8}$/.test(rawLimit))
    problems.push('SANDBOX_REQUEST_LOG_LIMIT must be a positive integer');

  if (problems.length > 0)
    throw new SandboxConfigError(
      `Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`,
    );
  return {
    port,
    host: value('SANDBOX_HOST') ?? '127.0.0.1',
    control: rawControl === '1',
    client,
    ...(publicUrl === undefined ? {} : { publicUrl }),
    ...(rawLimit === undefined ? {} : { requestLogLimit: Number(rawLimit) }),
    developmentDefaults,
  };
}
