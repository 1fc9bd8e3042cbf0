import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { API_ERROR_MESSAGES, type ApiErrorCode } from './api.ts';

/**
 * docs/extending.md is the integrator's reference: its table of errors names every code an
 * `ApiResult` can carry (API_ERROR_MESSAGES has one entry per ApiErrorCode, the compiler sees to
 * it), and no other.
 */
const guide = readFileSync(new URL('../../docs/extending.md', import.meta.url), 'utf8');

/** The codes in the first column of the rows of the table under the `### Errors` heading. */
function documentedCodes(): string[] {
  const section = guide.split(/^### Errors$/m)[1]?.split(/^#{2,3} /m)[0] ?? '';
  const lines = section.split('\n');
  const rows = lines.slice(lines.findIndex((line) => line.startsWith('|---')) + 1);
  return rows
    .filter((line) => line.startsWith('|'))
    .flatMap((line) => [...(line.split('|')[1] ?? '').matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!));
}

describe('docs/extending.md, the table of errors', () => {
  const codes = Object.keys(API_ERROR_MESSAGES) as ApiErrorCode[];

  it('is there', () => {
    expect(documentedCodes().length).toBeGreaterThan(0);
  });

  it.each(codes)('explains %s', (code) => {
    expect(documentedCodes()).toContain(code);
  });

  it('names no code an ApiResult never carries', () => {
    expect(documentedCodes().filter((code) => !codes.includes(code as ApiErrorCode))).toEqual([]);
  });
});
