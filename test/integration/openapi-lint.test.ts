import { createConfig, lint, type NormalizedProblem } from '@redocly/openapi-core';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * docs/openapi.json against Redocly's recommended rules, the ones generic tools (Redocly, and the
 * client generators built on it, such as openapi-typescript) hold a document to. The document
 * states each exception it takes, where and why (`x-baton-lint-exceptions`, written by
 * server/scripts/openapi.ts): any other error or warning fails, and so does a stated exception
 * that no longer excepts anything.
 */
const DOCUMENTS = ['openapi.json', 'admin-openapi.json'].map((name) => ({
  name,
  path: fileURLToPath(new URL(`../../docs/${name}`, import.meta.url)),
}));

interface LintException {
  rule: string;
  /** JSON pointers (`#/paths/~1healthz/get`): a problem at one of them or below it is excepted. */
  at: string[];
  reason: string;
}

const pointerOf = (problem: NormalizedProblem): string => problem.location[0]?.pointer ?? '#';
const covers = (rule: string, at: string, problem: NormalizedProblem): boolean => {
  const pointer = pointerOf(problem);
  return problem.ruleId === rule && (pointer === at || pointer.startsWith(`${at}/`));
};

// The public document, and the admin API's (docs/admin-openapi.json, on ADMIN_PORT), alike.
describe.each(DOCUMENTS)('docs/$name', ({ path: OPENAPI_PATH }) => {
  it("passes Redocly's recommended rules, but for the exceptions it states with their reasons", async () => {
    const document = JSON.parse(await readFile(OPENAPI_PATH, 'utf8')) as {
      'x-baton-lint-exceptions'?: LintException[];
    };
    const exceptions = document['x-baton-lint-exceptions'] ?? [];
    const problems = await lint({
      ref: OPENAPI_PATH,
      config: await createConfig({ extends: ['recommended'] }),
    });
    expect(problems.length, 'the rules ran').toBeGreaterThan(0);

    const excepted = (problem: NormalizedProblem) =>
      exceptions.some(({ rule, at }) => at.some((where) => covers(rule, where, problem)));
    expect(
      problems
        .filter((problem) => !excepted(problem))
        .map(
          (problem) =>
            `${problem.severity} ${problem.ruleId} at ${pointerOf(problem)}: ${problem.message}`,
        ),
    ).toEqual([]);

    for (const { rule, at, reason } of exceptions) {
      expect(reason.length, `the reason for ${rule}`).toBeGreaterThan(20);
      for (const where of at)
        expect(
          problems.some((problem) => covers(rule, where, problem)),
          `${rule} at ${where} still excepts something`,
        ).toBe(true);
    }
  });
});
