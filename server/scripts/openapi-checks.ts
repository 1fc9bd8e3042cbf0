import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { expect, it } from 'vitest';

/** Every Schema Object of a document, with where it is. */
function* schemas(node: unknown, at = '#'): Generator<[string, object]> {
  if (typeof node !== 'object' || node === null) return;
  for (const [key, value] of Object.entries(node)) {
    if (key === 'schema' && typeof value === 'object' && value !== null)
      yield [`${at}/${key}`, value];
    else yield* schemas(value, `${at}/${key}`);
  }
}

/**
 * The checks every published OpenAPI document of the broker passes (docs/openapi.json,
 * docs/admin-openapi.json), as tests of the calling `describe`: it is what its script generates
 * now, a valid OpenAPI 3.1 document, and each of its Schema Objects compiles as JSON Schema
 * 2020-12 with every `$ref` resolved.
 */
export function documentChecks(options: {
  path: string;
  render: () => Promise<string>;
  /** The command that writes it, for the failure's reader. */
  command: string;
}): void {
  const { path, render, command } = options;
  const published = async (): Promise<Record<string, unknown>> =>
    JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;

  it(`is what its script generates now (${command})`, async () => {
    expect(await readFile(path, 'utf8')).toBe(await render());
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
    const id = basename(path);
    /** The schema with its references to components.schemas pointing into the document. */
    const rebased = (schema: object): object =>
      JSON.parse(
        JSON.stringify(schema).replaceAll('"#/components/schemas/', `"${id}#/$defs/`),
      ) as object;
    ajv.addSchema(rebased({ $id: id, $defs: document.components?.schemas ?? {} }));
    const found = [...schemas(document)];
    expect(found.length).toBeGreaterThan(40);
    for (const [where, schema] of found)
      expect(() => ajv.compile(rebased(schema)), where).not.toThrow();
  });
}
