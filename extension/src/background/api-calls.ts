import { PROXY_ANSWER_HEADERS, PROXY_FRAMING_HEADERS, type ProxyAnswerHeader } from '@baton/shared';
import {
  API_MAX_ANSWER_BYTES,
  apiError,
  isApiErrorCode,
  type ApiAnswerHeader,
  type ApiConnectionsResult,
  type ApiError,
  type ApiHandlers,
  type ApiResult,
} from '../api.ts';
import { ProblemError, toProblem } from '../problems.ts';
import { checkApiRequest } from './api-request.ts';
import type { BrokerClient } from './broker-client.ts';
import type { BackgroundCore } from './core.ts';

/** What the integrator's API takes from the core. */
export type ApiCallsCore = Pick<
  BackgroundCore,
  | 'state'
  | 'log'
  | 'brokerUrlOf'
  | 'tokenOf'
  | 'clientFor'
  | 'requirePermission'
  | 'epoch'
  | 'endSession'
  | 'noteDisconnected'
>;

/**
 * The integrator's API (api.ts) over the session the popup holds: each call goes to the broker in
 * use with the session token, which stays here; the answer comes back as a result, never as a
 * rejection. The broker's word that the session is gone ends it here too, as for the popup.
 */
export function createApiCalls(core: ApiCallsCore): ApiHandlers {
  /** Runs `work` with the session's client and token, every failure as an ApiError. */
  async function withSession<T>(
    what: string,
    work: (client: BrokerClient, token: string) => Promise<T>,
  ): Promise<T | { ok: false; error: ApiError }> {
    const s = await core.state.read();
    const token = core.tokenOf(s);
    if (token === null) return { ok: false, error: apiError('signed_out') };
    const brokerUrl = core.brokerUrlOf(s);
    try {
      await core.requirePermission(brokerUrl);
      return await work(core.clientFor(brokerUrl), token);
    } catch (error) {
      const problem = toProblem(error);
      core.log(`${what}.failed`, { code: problem.code });
      if (problem.code === 'invalid_session') await core.endSession({ kind: 'session_ended' });
      // A code of calling the broker is the API's too; the flow's never arise here.
      const code = isApiErrorCode(problem.code) ? problem.code : 'unexpected';
      return { ok: false, error: apiError(code, undefined, problem.retryAt) };
    }
  }

  return {
    async 'api.request'(data) {
      const checked = checkApiRequest(data);
      if (!checked.ok) return checked;
      const since = core.epoch();
      const result = await withSession('api.request', async (client, token) =>
        readAnswer(await client.callApi(token, checked.call)),
      );
      // The broker found the licence disconnected on the way: the popup and the badge say so.
      if (!result.ok && result.error.code === 'reauthorization_required')
        await core.noteDisconnected([{ id: checked.call.connectionId, reason: null }], since);
      return result;
    },
    async 'api.connections'() {
      const since = core.epoch();
      return withSession('api.connections', async (client, token) => {
        const list = await client.listConnections(token);
        await core.noteDisconnected(
          list
            .filter((c) => c.status === 'disconnected')
            .map((c) => ({ id: c.id, reason: c.disconnected_reason ?? null })),
          since,
        );
        const result: ApiConnectionsResult = {
          ok: true,
          connections: list.map((c) => ({
            id: c.id,
            status: c.status,
            apiOrigin: c.api_origin,
            disconnectedReason: c.disconnected_reason ?? null,
          })),
        };
        return result;
      });
    },
  };
}

/** The answer headers a caller reads: those the broker passes on, but for the body's framing. */
const API_ANSWER_HEADERS = PROXY_ANSWER_HEADERS.filter(
  (name: ProxyAnswerHeader): name is ApiAnswerHeader =>
    !(PROXY_FRAMING_HEADERS as readonly string[]).includes(name),
);

const JSON_TYPE = /^application\/(?:[\w.-]+\+)?json\s*(?:;|$)/i;

/** The license API's answer as a result: its status, the safe headers, its body read up to the bound. */
async function readAnswer(response: Response): Promise<ApiResult> {
  const bytes = await readBounded(response, API_MAX_ANSWER_BYTES);
  if (bytes === null) return { ok: false, error: apiError('answer_too_large') };
  const headers: Partial<Record<ApiAnswerHeader, string>> = {};
  for (const name of API_ANSWER_HEADERS) {
    const value = response.headers.get(name);
    if (value !== null) headers[name] = value;
  }
  return { ok: true, status: response.status, headers, body: decodeBody(bytes, headers) };
}

function decodeBody(bytes: Uint8Array, headers: { 'content-type'?: string }): unknown {
  if (bytes.length === 0) return null;
  const text = new TextDecoder().decode(bytes);
  if (!JSON_TYPE.test(headers['content-type'] ?? '')) return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** The body's bytes, or null (and the rest left unread) when it is longer than `max`. */
async function readBounded(response: Response, max: number): Promise<Uint8Array | null> {
  const declared = Number(response.headers.get('content-length') ?? '0');
  if (declared > max) {
    await response.body?.cancel();
    return null;
  }
  if (response.body === null) return new Uint8Array(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let length = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      length += value.length;
      if (length > max) {
        await reader.cancel();
        return null;
      }
      chunks.push(value);
    }
  } catch (error) {
    const timedOut = error instanceof DOMException && error.name === 'TimeoutError';
    throw new ProblemError({ code: timedOut ? 'timeout' : 'broker_unreachable' }, { cause: error });
  }
  const bytes = new Uint8Array(length);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  return bytes;
}
