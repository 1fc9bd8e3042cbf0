import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CONFIG_VARIABLES, FILE_SECRETS } from '../config/config.ts';

const read = (path: string) => readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8');
const sorted = (names: Iterable<string>) => [...new Set(names)].sort();
const everyName = sorted([...CONFIG_VARIABLES, ...FILE_SECRETS.map((name) => `${name}_FILE`)]);

/** Where an operator reads the variables: they must name exactly what the schema reads. */
describe('the variables, as the schema, the guide and .env.example list them', () => {
  it('server/.env.example lists every variable and no other', () => {
    const listed = [...read('server/.env.example').matchAll(/^#?\s*([A-Z][A-Z0-9_]+)=/gm)].map(
      (match) => match[1]!,
    );
    expect(sorted(listed)).toEqual(everyName);
  });

  it("docs/operations.md's table names every variable and no other", () => {
    const guide = read('docs/operations.md');
    const table = guide.slice(guide.indexOf('## Environment'), guide.indexOf('## Start-up'));
    const rows = table.split('\n').filter((line) => line.startsWith('| `'));
    const named = rows.flatMap((row) =>
      [...(row.split(' | ')[0] ?? '').matchAll(/`([A-Z][A-Z0-9_]+)`/g)].map((match) => match[1]!),
    );
    expect(sorted(named)).toEqual(everyName);
  });

  it('server/compose.yaml passes every variable through but those it decides itself', () => {
    const compose = read('server/compose.yaml');
    // OTEL_* are the OpenTelemetry SDK's own (tracing.ts), passed through beside the broker's.
    const passed = [...compose.matchAll(/^ {6}([A-Z][A-Z0-9_]+):/gm)]
      .map((match) => match[1]!)
      .filter((name) => !name.startsWith('OTEL_'));
    // The image sets NODE_ENV, HOST and PORT; compose runs its own standalone Redis; secrets are
    // files (compose's `secrets:`), never values in the environment.
    const decided = [
      'NODE_ENV',
      'HOST',
      'PORT',
      'REDIS_SENTINEL',
      'REDIS_CLUSTER_NODES',
      'REDIS_SENTINEL_PASSWORD',
      'REDIS_SENTINEL_PASSWORD_FILE',
      ...FILE_SECRETS,
    ];
    expect(sorted([...passed, ...decided])).toEqual(sorted([...everyName, 'BATON_DOMAIN']));
  });
});
