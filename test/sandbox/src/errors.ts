/** Error codes the sandbox answers with: RFC 6749 section 5.2, RFC 6750 section 3.1, and 404. */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unsupported_grant_type'
  | 'invalid_token'
  | 'not_found'
  | 'method_not_allowed'
  | 'server_error';

const STATUS: Record<OAuthErrorCode, number> = {
  invalid_request: 400,
  invalid_client: 401,
  invalid_grant: 400,
  unsupported_grant_type: 400,
  invalid_token: 401,
  not_found: 404,
  method_not_allowed: 405,
  server_error: 500,
};

export interface ErrorBody {
  error: OAuthErrorCode;
  error_description: string;
}

/** An error the sandbox answers on purpose, as `{ error, error_description }` (RFC 6749 5.2). */
export class OAuthError extends Error {
  override name = 'OAuthError';
  readonly code: OAuthErrorCode;
  readonly status: number;

  constructor(code: OAuthErrorCode, description: string) {
    super(description);
    this.code = code;
    this.status = STATUS[code];
  }

  toBody(): ErrorBody {
    return { error: this.code, error_description: this.message };
  }
}

/** A control API input that does not have the documented shape. */
export class ControlInputError extends Error {
  override name = 'ControlInputError';
}
