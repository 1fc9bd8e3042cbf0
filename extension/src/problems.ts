import type { AuthRedirectError, ErrorCode } from '@baton/shared';

/**
 * The extension's error codes, one vocabulary: the broker's own (`ErrorCode`) and the flow's
 * redirect errors (`AuthRedirectError`) as @baton/shared spells them, and the extension's, each
 * written once. The popup explains a `ProblemCode`; the integrator's API answers with an
 * `ApiErrorCode` (api.ts: these for calling the broker, and four of its own); a code in both means
 * the same in both.
 */

/** Calling the broker, from the popup or from the integrator's API (api.ts's `ApiErrorCode`). */
export type BrokerCallCode =
  | ErrorCode
  /** The extension may not reach the broker (its host permission is not granted). */
  | 'permission_missing'
  | 'broker_unreachable'
  | 'timeout'
  | 'unexpected';

/**
 * Everything that can go wrong, as the popup explains it (ui/problem-text.ts): calling the broker,
 * the authorization flow, a license API's own refusal.
 */
export type ProblemCode =
  | BrokerCallCode
  | AuthRedirectError
  | 'cancelled'
  | 'auth_page_failed'
  /** The broker does not accept this browser's redirect URL (EXTENSION_REDIRECT_URLS). */
  | 'redirect_not_allowed'
  | 'interrupted'
  /** A license API's own answer through the proxy, about that call: not the broker's error. */
  | 'upstream_refused';

export interface Problem {
  readonly code: ProblemCode;
  /** When the broker said to try again (`Retry-After`), as epoch milliseconds. */
  readonly retryAt?: number;
  /** The license API's HTTP status, for `upstream_refused`. */
  readonly status?: number;
  /**
   * For `redirect_not_allowed`: this browser's redirect URL, which the broker's operator must add
   * (it is no secret: the options page shows it too).
   */
  readonly redirectUrl?: string;
}

/** Thrown by the broker client and the flow; caught and turned into state at one place each. */
export class ProblemError extends Error {
  readonly problem: Problem;

  constructor(problem: Problem, options?: ErrorOptions) {
    super(problem.code, options);
    this.name = 'ProblemError';
    this.problem = problem;
  }
}

export function toProblem(error: unknown): Problem {
  return error instanceof ProblemError ? error.problem : { code: 'unexpected' };
}

/** Problems the user caused on purpose or that are plain information, not failures. */
export function isBenign(code: ProblemCode): boolean {
  return code === 'cancelled';
}
