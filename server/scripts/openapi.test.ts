import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { OPENAPI_PATH, renderOpenApi } from './openapi.ts';

/** The document as published. */
const published = async (): Promise<Record<string, unknown>> =>
  JSON.parse(await readFile(OPENAPI_PATH, 'utf8')) as Record<string, unknown>;

/** Every Schema Object of the document, with where it is. */
function* schemas(node: unknown, at = '#'): Generator<[string, object]> {
  if (typeof node !== 'object' || node === null) return;
  for (const [key, value] of Object.entries(node)) {
    if (key === 'schema' && typeof value === 'object' && value !== null)
      yield [`${at}/${key}`, value];
    else yield* schemas(value, `${at}/${key}`);
  }
}

describe('docs/openapi.json', () => {
  it('is what server/scripts/openapi.ts generates now (pnpm --filter @baton/server openapi)', async () => {
    expect(await readFile(OPENAPI_PATH, 'utf8')).toBe(await renderOpenApi());
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(await published());
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('has Schema Objects that are valid JSON Schema 2020-12, each $ref resolved', async () => {
    // The OpenAPI 3.1 schema checks only that a Schema Object is an object: compile each one.
    const document = (await published()) as { components?: { schemas?: object } };
    const ajv = new Ajv2020({ strict: true, allErrors: true });
    addFormats.default(ajv);
    /** The schema with its references to components.schemas pointing into `openapi.json`. */
    const rebased = (schema: object): object =>
      JSON.parse(
        JSON.stringify(schema).replaceAll('"#/components/schemas/', '"openapi.json#/$defs/'),
      ) as object;
    ajv.addSchema(rebased({ $id: 'openapi.json', $defs: document.components?.schemas ?? {} }));
    const found = [...schemas(document)];
    expect(found.length).toBeGreaterThan(40);
    for (const [where, schema] of found) {
      expect(() => ajv.compile(rebased(schema)), where).not.toThrow();
    }
  });
});
