import { ControlInputError } from './errors.ts';

/** `token` is `{api_url}/oauth2/access_token`; `api` is every other path under an api_url. */
export type FaultTarget = 'token' | 'api';
export type TokenGrant = 'auth_code' | 'refresh_token';
export type RedirectStatus = 301 | 302 | 303 | 307 | 308;

interface Scope {
  /** Applies to this many matching requests, then disappears. Omitted: until cleared. */
  count?: number;
  /** Only requests to this license's api_url. Omitted: every license. */
  licenseId?: string;
}

/**
 * What a test can make go wrong. `latency` delays, then the request proceeds (and may meet another
 * fault); `status`, `redirect` and `token_body` answer instead of the endpoint, which then does
 * nothing; `drop_after_rotate` lets the token endpoint do its work, then destroys the socket;
 * `set_cookie` adds a Set-Cookie header to API answers.
 */
export type Fault = Scope &
  (
    | { kind: 'latency'; target: FaultTarget; ms: number }
    | {
        kind: 'status';
        target: FaultTarget;
        status: number;
        retryAfter?: number | string;
        body?: string;
        /** Extra response headers, as an upstream that tries to pass for the broker would send. */
        headers?: Record<string, string>;
      }
    | { kind: 'redirect'; target: FaultTarget; location: string; status?: RedirectStatus }
    | { kind: 'drop_after_rotate'; target?: 'token'; grant?: TokenGrant }
    | { kind: 'token_body'; target?: 'token'; status?: number; contentType?: string; body: string }
    | { kind: 'set_cookie'; target?: 'api'; cookie: string }
  );
export type FaultKind = Fault['kind'];

export interface ActiveFault {
  id: number;
  fault: Fault;
  /** Matching requests it still applies to; undefined: until cleared. */
  remaining: number | undefined;
}

export interface FaultMatch {
  target: FaultTarget;
  licenseId: string;
  /** Known only once the token request is parsed (for `drop_after_rotate`). */
  grant?: string;
}

const targetOf = (fault: Fault): FaultTarget => {
  switch (fault.kind) {
    case 'drop_after_rotate':
    case 'token_body':
      return 'token';
    case 'set_cookie':
      return 'api';
    default:
      return fault.target;
  }
};

const matches = (fault: Fault, match: FaultMatch): boolean =>
  targetOf(fault) === match.target &&
  (fault.licenseId === undefined || fault.licenseId === match.licenseId) &&
  (fault.kind !== 'drop_after_rotate' || (fault.grant ?? 'refresh_token') === match.grant);

/** The active faults, in the order they were added; the first match applies. */
export function createFaults() {
  let active: ActiveFault[] = [];
  let nextId = 1;
  return {
    add(fault: Fault): ActiveFault {
      const parsed = parseFault(fault);
      const entry = { id: nextId++, fault: parsed, remaining: parsed.count };
      active.push(entry);
      return entry;
    },
    /** Takes one use of the first active fault of one of `kinds` that matches the request. */
    take<K extends FaultKind>(kinds: readonly K[], match: FaultMatch) {
      const entry = active.find(
        ({ fault }) =>
          (kinds as readonly FaultKind[]).includes(fault.kind) && matches(fault, match),
      );
      if (!entry) return undefined;
      if (entry.remaining !== undefined && --entry.remaining <= 0)
        active = active.filter((other) => other !== entry);
      return entry.fault as Extract<Fault, { kind: K }>;
    },
    list: (): ActiveFault[] => active.map((entry) => ({ ...entry })),
    clear(): void {
      active = [];
    },
  };
}
export type Faults = ReturnType<typeof createFaults>;

// Validation of a fault that may come from JSON (the control API).

type Fields = Record<string, unknown>;

function field<T>(
  input: Fields,
  name: string,
  check: (value: unknown) => value is T,
  expected: string,
): T | undefined {
  const value = input[name];
  if (value === undefined) return undefined;
  if (!check(value)) throw new ControlInputError(`fault.${name} must be ${expected}`);
  return value;
}

function required<T>(value: T | undefined, name: string): T {
  if (value === undefined) throw new ControlInputError(`fault.${name} is required`);
  return value;
}

const isString = (value: unknown): value is string => typeof value === 'string';
const isInt =
  (min: number, max: number) =>
  (value: unknown): value is number =>
    Number.isInteger(value) && (value as number) >= min && (value as number) <= max;
const isOneOf =
  <T extends string | number>(values: readonly T[]) =>
  (value: unknown): value is T =>
    (values as readonly unknown[]).includes(value);

const TARGETS = ['token', 'api'] as const;
const GRANTS = ['auth_code', 'refresh_token'] as const;
const REDIRECTS = [301, 302, 303, 307, 308] as const;

/** Checks a fault's shape (it may come from JSON) and returns a clean copy. */
export function parseFault(input: unknown): Fault {
  if (typeof input !== 'object' || input === null)
    throw new ControlInputError('fault must be an object');
  const fields = input as Fields;
  const scope: Scope = {};
  const count = field(fields, 'count', isInt(1, 1_000_000), 'a positive integer');
  if (count !== undefined) scope.count = count;
  const licenseId = field(fields, 'licenseId', isString, 'a string');
  if (licenseId !== undefined) scope.licenseId = licenseId;
  const implied = (only: FaultTarget): void => {
    if (fields.target !== undefined && fields.target !== only)
      throw new ControlInputError(`fault.target of ${String(fields.kind)} can only be "${only}"`);
  };
  const target = () =>
    required(field(fields, 'target', isOneOf(TARGETS), '"token" or "api"'), 'target');

  switch (fields.kind) {
    case 'latency':
      return {
        ...scope,
        kind: 'latency',
        target: target(),
        ms: required(field(fields, 'ms', isInt(0, 600_000), 'an integer 0..600000'), 'ms'),
      };
    case 'status': {
      const fault: Fault = {
        ...scope,
        kind: 'status',
        target: target(),
        status: required(field(fields, 'status', isInt(400, 599), 'an integer 400..599'), 'status'),
      };
      const retryAfter = fields.retryAfter;
      if (typeof retryAfter === 'number' || typeof retryAfter === 'string')
        fault.retryAfter = retryAfter;
      else if (retryAfter !== undefined)
        throw new ControlInputError('fault.retryAfter must be a number or a string');
      const body = field(fields, 'body', isString, 'a string');
      if (body !== undefined) fault.body = body;
      const headers = fields.headers;
      if (headers !== undefined) {
        if (
          typeof headers !== 'object' ||
          headers === null ||
          !Object.values(headers).every((value) => typeof value === 'string')
        )
          throw new ControlInputError('fault.headers must be an object of strings');
        fault.headers = headers as Record<string, string>;
      }
      return fault;
    }
    case 'redirect': {
      const fault: Fault = {
        ...scope,
        kind: 'redirect',
        target: target(),
        location: required(field(fields, 'location', isString, 'a string'), 'location'),
      };
      const status = field(fields, 'status', isOneOf(REDIRECTS), 'one of 301, 302, 303, 307, 308');
      if (status !== undefined) fault.status = status;
      return fault;
    }
    case 'drop_after_rotate': {
      implied('token');
      const fault: Fault = { ...scope, kind: 'drop_after_rotate' };
      const grant = field(fields, 'grant', isOneOf(GRANTS), '"auth_code" or "refresh_token"');
      if (grant !== undefined) fault.grant = grant;
      return fault;
    }
    case 'token_body': {
      implied('token');
      const fault: Fault = {
        ...scope,
        kind: 'token_body',
        body: required(field(fields, 'body', isString, 'a string'), 'body'),
      };
      const status = field(fields, 'status', isInt(100, 599), 'an integer 100..599');
      if (status !== undefined) fault.status = status;
      const contentType = field(fields, 'contentType', isString, 'a string');
      if (contentType !== undefined) fault.contentType = contentType;
      return fault;
    }
    case 'set_cookie':
      implied('api');
      return {
        ...scope,
        kind: 'set_cookie',
        cookie: required(field(fields, 'cookie', isString, 'a string'), 'cookie'),
      };
    default:
      throw new ControlInputError(
        'fault.kind must be one of latency, status, redirect, drop_after_rotate, token_body, set_cookie',
      );
  }
}
