import type { AuthRedirectError, ErrorCode } from '@baton/shared';

/**
 * Everything that can go wrong, as the popup explains it. The broker's own codes (`ErrorCode`)
 * and the flow's redirect errors (`AuthRedirectError`) come from @baton/shared; the rest are the
 * extension's: the broker can't be reached, the user closed the window, and so on.
 */
export type ProblemCode =
  | ErrorCode
  | AuthRedirectError
  | 'broker_unreachable'
  | 'timeout'
  | 'permission_missing'
  | 'cancelled'
  | 'auth_page_failed'
  /** The broker does not accept this browser's redirect URL (EXTENSION_REDIRECT_URLS). */
  | 'redirect_not_allowed'
  | 'interrupted'
  /** A license API's own answer through the proxy, about that call: not the broker's error. */
  | 'upstream_refused'
  | 'unexpected';

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
