import { findLicense } from './accounts.ts';
import { ControlInputError } from './errors.ts';

/**
 * What the sandbox issued and still honours, as plain data: its grants, the access tokens (with
 * their expiry, on the sandbox clock) and refresh tokens (used or not) of each, and every secret it
 * knows. A test that restores a broker's recorded data imports it into a fresh sandbox, which then
 * knows the tokens that data holds. Control API only: never part of what the provider offers.
 */
export interface IssuedTokens {
  grants: IssuedGrant[];
  accessTokens: { token: string; grant: string; expiresAt: number }[];
  refreshTokens: { token: string; grant: string; used: boolean }[];
  secrets: string[];
}

export interface IssuedGrant {
  id: string;
  clientId: string;
  licenseId: string;
  email: string;
  revoked: boolean;
}

type Fields = Record<string, unknown>;

function list(input: Fields, name: string): unknown[] {
  const value = input[name];
  if (!Array.isArray(value)) throw new ControlInputError(`${name} must be an array`);
  return value as unknown[];
}

function object(value: unknown, where: string): Fields {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new ControlInputError(`${where} must be an object`);
  return value as Fields;
}

function text(fields: Fields, name: string, where: string): string {
  const value = fields[name];
  if (typeof value !== 'string' || value === '')
    throw new ControlInputError(`${where}.${name} must be a non-empty string`);
  return value;
}

function flag(fields: Fields, name: string, where: string): boolean {
  const value = fields[name];
  if (typeof value !== 'boolean') throw new ControlInputError(`${where}.${name} must be a boolean`);
  return value;
}

function grantOf(value: unknown, index: number): IssuedGrant {
  const where = `grants[${index}]`;
  const fields = object(value, where);
  const licenseId = text(fields, 'licenseId', where);
  if (!findLicense(licenseId))
    throw new ControlInputError(`${where}: there is no license ${licenseId}`);
  return {
    id: text(fields, 'id', where),
    clientId: text(fields, 'clientId', where),
    licenseId,
    email: text(fields, 'email', where).toLowerCase(),
    revoked: flag(fields, 'revoked', where),
  };
}

/**
 * `input` as IssuedTokens, or a ControlInputError naming the first field that is not. A token's
 * grant must be among `knownGrants` or the input's own grants; a token must carry its prefix.
 */
export function parseIssuedTokens(
  input: unknown,
  options: { knownGrants: (id: string) => boolean; prefix: { access: string; refresh: string } },
): IssuedTokens {
  const body = object(input, 'the body');
  const grants = list(body, 'grants').map(grantOf);
  const granted = new Set(grants.map((grant) => grant.id));
  for (const [index, grant] of grants.entries())
    if (options.knownGrants(grant.id) || grants.findIndex((each) => each.id === grant.id) < index)
      throw new ControlInputError(`grants[${index}]: grant ${grant.id} is already known`);
  const grantRef = (fields: Fields, where: string): string => {
    const id = text(fields, 'grant', where);
    if (!granted.has(id) && !options.knownGrants(id))
      throw new ControlInputError(`${where}.grant names no grant`);
    return id;
  };
  const tokenOf = (fields: Fields, where: string, prefix: string): string => {
    const token = text(fields, 'token', where);
    if (!token.startsWith(prefix))
      throw new ControlInputError(`${where}.token must start ${prefix}`);
    return token;
  };
  const accessTokens = list(body, 'accessTokens').map((value, index) => {
    const where = `accessTokens[${index}]`;
    const fields = object(value, where);
    const expiresAt = fields.expiresAt;
    if (typeof expiresAt !== 'number' || !Number.isFinite(expiresAt))
      throw new ControlInputError(`${where}.expiresAt must be a finite number`);
    return {
      token: tokenOf(fields, where, options.prefix.access),
      grant: grantRef(fields, where),
      expiresAt,
    };
  });
  const refreshTokens = list(body, 'refreshTokens').map((value, index) => {
    const where = `refreshTokens[${index}]`;
    const fields = object(value, where);
    return {
      token: tokenOf(fields, where, options.prefix.refresh),
      grant: grantRef(fields, where),
      used: flag(fields, 'used', where),
    };
  });
  const secrets = list(body, 'secrets').map((secret, index) => {
    if (typeof secret !== 'string' || secret === '')
      throw new ControlInputError(`secrets[${index}] must be a non-empty string`);
    return secret;
  });
  return { grants, accessTokens, refreshTokens, secrets };
}
