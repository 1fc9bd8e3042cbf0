import type { Dispatcher } from 'undici';
import { z } from 'zod';
import { retryAfterMs as parseRetryAfter } from '../base/retry-after.ts';

/** What the provider gives back from both token grants, as the broker keeps it. */
export interface TokenSet {
  accessToken: string;
  refreshToken: string;
  /** Epoch milliseconds, computed from expires_in at the time of issue. */
  expiresAt: number;
}

/**
 * Why a token request did not yield a token set:
 * - `rejected`: the provider refused (4xx other than 408/429): the grant is gone.
 * - `transient`: nothing happened that we know of (network, timeout, 5xx, 429, a redirect).
 * - `lost`: the request may have been processed but no usable answer came back.
 */
export type ProviderFailure = 'rejected' | 'transient' | 'lost';

export class ProviderError extends Error {
  override name = 'ProviderError';
  readonly failure: ProviderFailure;
  readonly status: number | undefined;
  /** How long the provider asked us to wait (Retry-After), in ms, when it did. */
  readonly retryAfterMs: number | undefined;

  constructor(
    failure: ProviderFailure,
    message: string,
    options: { status?: number; retryAfterMs?: number | undefined; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? {} : { cause: options.cause });
    this.failure = failure;
    this.status = options.status;
    this.retryAfterMs = options.retryAfterMs;
  }
}

// A token goes into an Authorization header: printable ASCII only, bounded.
const token = z.string().regex(/^[\x21-\x7e]{1,4096}$/);
const tokenResponseSchema = z.object({
  token_type: z.string().regex(/^bearer$/i),
  expires_in: z.number().int().positive().max(86_400),
  access_token: token,
  refresh_token: token,
});

export interface ProviderOptions {
  clientId: string;
  clientSecret: string;
  redirectUri: string;
  dispatcher: Dispatcher;
  now: () => number;
  /** Bound on a token request until its answer's status and headers arrive, in ms. */
  timeoutMs: number;
  /**
   * Bound on reading an answer's body once its headers arrived, in ms (default 4000: within the
   * 5 s the refresh lease outlasts the token timeout). An answer under way is the provider's word
   * that it acted: cut at the request's own deadline, a rotated pair would be thrown away.
   */
  bodyTimeoutMs?: number;
}

const MAX_TOKEN_RESPONSE_BYTES = 64 * 1024;

/**
 * A request's deadline that lets an answer already received be read first. After a pause (the
 * process stopped, a long GC), Node runs due timers before it reads its sockets: a plain
 * AbortSignal.timeout (or undici's own timeouts) would end a request whose answer is waiting in the
 * socket, and a rotated pair the provider has issued would be thrown away. So the deadline aborts
 * from an immediate, which runs after that loop turn has read the sockets. `restart` gives what
 * is left of the exchange a bound of its own: an answer whose headers arrived is read to its end
 * (its body may come in a later segment, after the request's deadline), within bodyTimeoutMs.
 */
function deferredDeadline(ms: number): {
  signal: AbortSignal;
  clear: () => void;
  restart: (ms: number) => void;
} {
  const controller = new AbortController();
  let immediate: NodeJS.Immediate | undefined;
  let timer: NodeJS.Timeout | undefined;
  const clear = () => {
    clearTimeout(timer);
    clearImmediate(immediate);
  };
  const restart = (after: number) => {
    clear();
    timer = setTimeout(() => {
      immediate = setImmediate(() =>
        controller.abort(new DOMException('the token request timed out', 'TimeoutError')),
      );
    }, after);
  };
  restart(ms);
  return { signal: controller.signal, clear, restart };
}

/**
 * The provider's two token operations, on the license's api_url. The caller has already checked
 * api_url against the allowlist: the client secret goes nowhere else. Redirects are never followed.
 */
export function createProvider(options: ProviderOptions) {
  async function tokenRequest(apiUrl: string, form: Record<string, string>): Promise<TokenSet> {
    const url = new URL(`${apiUrl}/oauth2/access_token`);
    const body = new URLSearchParams({
      ...form,
      client_id: options.clientId,
      client_secret: options.clientSecret,
    }).toString();
    const issuedAt = options.now();
    const deadline = deferredDeadline(options.timeoutMs);
    try {
      return await answer(url, body, issuedAt, deadline);
    } finally {
      deadline.clear();
    }
  }

  async function answer(
    url: URL,
    body: string,
    issuedAt: number,
    deadline: ReturnType<typeof deferredDeadline>,
  ): Promise<TokenSet> {
    let response: Dispatcher.ResponseData;
    try {
      response = await options.dispatcher.request({
        origin: url.origin,
        path: url.pathname,
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
        },
        body,
        // The deadline bounds headers and body alike: undici's own timers would fire as early.
        headersTimeout: 0,
        bodyTimeout: 0,
        signal: deadline.signal,
      });
    } catch (cause) {
      // Refused or unreachable: nothing was sent. Otherwise the provider may have acted on it.
      const failure = neverSent(cause) ? 'transient' : 'lost';
      throw new ProviderError(failure, 'no answer from the token endpoint', { cause });
    }
    // The answer is under way: its body gets a bound of its own, not what is left of the request's.
    deadline.restart(options.bodyTimeoutMs ?? 4000);
    const { statusCode: status } = response;
    const retryAfterMs = parseRetryAfter(response.headers['retry-after'], options.now());
    if (status < 200 || status >= 300) {
      await response.body.dump({ limit: MAX_TOKEN_RESPONSE_BYTES }).catch(() => {});
      const failure =
        status >= 400 && status < 500 && status !== 408 && status !== 429
          ? 'rejected'
          : 'transient';
      throw new ProviderError(failure, `token endpoint answered ${status}`, {
        status,
        retryAfterMs,
      });
    }
    let text: string;
    try {
      text = await readLimited(response.body, MAX_TOKEN_RESPONSE_BYTES);
    } catch (cause) {
      throw new ProviderError('lost', 'token response unreadable or too large', { status, cause });
    }
    const parsed = readTokenResponse(text);
    if (typeof parsed === 'string') {
      // A 2xx we cannot use: the provider may have rotated, so the answer counts as lost.
      throw new ProviderError('lost', `token response is not a valid token set (${parsed})`, {
        status,
      });
    }
    return {
      accessToken: parsed.access_token,
      refreshToken: parsed.refresh_token,
      expiresAt: issuedAt + parsed.expires_in * 1000,
    };
  }

  return {
    exchangeCode(apiUrl: string, code: string): Promise<TokenSet> {
      return tokenRequest(apiUrl, {
        grant_type: 'auth_code',
        code,
        redirect_uri: options.redirectUri,
      });
    },
    refresh(apiUrl: string, refreshToken: string): Promise<TokenSet> {
      return tokenRequest(apiUrl, { grant_type: 'refresh_token', refresh_token: refreshToken });
    },
  };
}
export type Provider = ReturnType<typeof createProvider>;

/**
 * The token set of a token response, or what is wrong with it, named without quoting the body:
 * parser and schema messages echo the text around the fault, and that text may be a token.
 */
function readTokenResponse(text: string): z.infer<typeof tokenResponseSchema> | string {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return 'not JSON';
  }
  const result = tokenResponseSchema.safeParse(json);
  if (result.success) return result.data;
  const fields = new Set(result.error.issues.map((issue) => issue.path.join('.') || 'body'));
  return `invalid ${[...fields].join(', ')}`;
}

const NOT_SENT = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'UND_ERR_CONNECT_TIMEOUT']);

function neverSent(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && NOT_SENT.has(code);
}

async function readLimited(body: AsyncIterable<Buffer>, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > limit) throw new Error(`body over ${limit} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}
