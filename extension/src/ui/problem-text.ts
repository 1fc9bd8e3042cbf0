import type { DisconnectedReason } from '@baton/shared';
import type { BrokerUrlProblem } from '../broker-url.ts';
import { displayHost } from '../broker-url.ts';
import type { Problem, ProblemCode } from '../problems.ts';
import { formatTime, t, type MessageKey } from './i18n.ts';

/** One sentence per problem; `satisfies` makes a new code without a sentence a type error. */
export const PROBLEM_MESSAGES = {
  broker_unreachable: 'problemBrokerUnreachable',
  timeout: 'problemTimeout',
  permission_missing: 'problemPermissionMissing',
  cancelled: 'problemCancelled',
  auth_page_failed: 'problemAuthPageFailed',
  redirect_not_allowed: 'problemRedirectNotAllowed',
  interrupted: 'problemInterrupted',
  access_denied: 'problemAccessDenied',
  invalid_state: 'problemInvalidState',
  invalid_api_url: 'problemInvalidApiUrl',
  exchange_failed: 'problemExchangeFailed',
  server_error: 'problemServerError',
  invalid_request: 'problemInvalidRequest',
  invalid_session: 'problemInvalidSession',
  invalid_grant: 'problemInvalidGrant',
  not_found: 'problemNotFound',
  reauthorization_required: 'problemReauthorizationRequired',
  upstream_unavailable: 'problemUpstreamUnavailable',
  upstream_too_large: 'problemUpstreamTooLarge',
  rate_limited: 'problemRateLimited',
  upstream_refused: 'problemUpstreamRefused',
  unexpected: 'problemUnexpected',
} as const satisfies Record<ProblemCode, MessageKey>;

export const DISCONNECTED_MESSAGES = {
  refresh_rejected: 'reasonRefreshRejected',
  refresh_response_lost: 'reasonRefreshResponseLost',
  api_url_not_allowed: 'reasonApiUrlNotAllowed',
  disconnected_by_operator: 'reasonDisconnectedByOperator',
} as const satisfies Record<DisconnectedReason, MessageKey>;

export const BROKER_URL_MESSAGES = {
  empty: 'brokerProblemEmpty',
  not_a_url: 'brokerProblemNotAUrl',
  unsupported_scheme: 'brokerProblemUnsupportedScheme',
  insecure: 'brokerProblemInsecure',
  has_credentials: 'brokerProblemHasCredentials',
  has_query_or_fragment: 'brokerProblemHasQueryOrFragment',
} as const satisfies Record<BrokerUrlProblem, MessageKey>;

export function problemText(problem: Problem, brokerUrl: string, now: number): string {
  const sentence = t(PROBLEM_MESSAGES[problem.code], displayHost(brokerUrl));
  if (problem.retryAt !== undefined && problem.retryAt > now + 5_000) {
    return `${sentence} ${t('retryAfter', formatTime(problem.retryAt))}`;
  }
  return sentence;
}

export function disconnectedText(reason: DisconnectedReason | null): string {
  return t(reason === null ? 'reasonUnknown' : DISCONNECTED_MESSAGES[reason]);
}
