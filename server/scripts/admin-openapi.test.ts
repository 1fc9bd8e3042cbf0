import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { ADMIN_API_BASE, ADMIN_ROUTES } from '../src/http/admin/routes.ts';
import { ADMIN_OPENAPI_PATH, renderAdminOpenApi } from './admin-openapi.ts';

type Operation = { security?: Record<string, unknown>[]; responses: Record<string, unknown> };
type Document = {
  paths: Record<string, Record<string, Operation>>;
  servers: { url: string; variables?: Record<string, unknown> }[];
  components: { schemas: object };
};

const published = async (): Promise<Document> =>
  JSON.parse(await readFile(ADMIN_OPENAPI_PATH, 'utf8')) as Document;

/** Every Schema Object of the document, with where it is. */
function* schemas(node: unknown, at = '#'): Generator<[string, object]> {
  if (typeof node !== 'object' || node === null) return;
  for (const [key, value] of Object.entries(node)) {
    if (key === 'schema' && typeof value === 'object' && value !== null)
      yield [`${at}/${key}`, value];
    else yield* schemas(value, `${at}/${key}`);
  }
}

describe('docs/admin-openapi.json', () => {
  it('is what server/scripts/admin-openapi.ts generates now (pnpm --filter @baton/server admin-openapi)', async () => {
    expect(await readFile(ADMIN_OPENAPI_PATH, 'utf8')).toBe(await renderAdminOpenApi());
  });

  it('is a valid OpenAPI 3.1 document', async () => {
    const validator = new Validator();
    const result = await validator.validate(await published());
    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
    expect(validator.version).toBe('3.1');
  });

  it('has Schema Objects that are valid JSON Schema 2020-12, each $ref resolved', async () => {
    const document = await published();
    const ajv = new Ajv2020({ strict: true, allErrors: true });
    addFormats.default(ajv);
    const rebased = (schema: object): object =>
      JSON.parse(
        JSON.stringify(schema).replaceAll('"#/components/schemas/', '"admin.json#/$defs/'),
      ) as object;
    ajv.addSchema(rebased({ $id: 'admin.json', $defs: document.components.schemas }));
    const found = [...schemas(document)];
    expect(found.length).toBeGreaterThan(40);
    for (const [where, schema] of found)
      expect(() => ajv.compile(rebased(schema)), where).not.toThrow();
  });

  it('lists every route of the API, each behind the bearer token with 401, 429 and 503 documented', async () => {
    const { paths, servers } = await published();
    expect(servers[0]?.variables).toBeDefined();
    const routes = Object.values(ADMIN_ROUTES).map(
      (route) => `${ADMIN_API_BASE}${route.replace(/:(\w+)/g, '{$1}')}`,
    );
    expect(
      Object.keys(paths)
        .filter((path) => path.startsWith('/api/'))
        .sort(),
    ).toEqual([...new Set(routes)].sort());
    for (const path of routes)
      for (const [method, operation] of Object.entries(paths[path] ?? {})) {
        const at = `${method} ${path}`;
        expect(operation.security, at).toEqual([{ adminToken: [] }]);
        for (const status of ['401', '429', '503'])
          expect(Object.keys(operation.responses), at).toContain(status);
        // An action a viewer may not take says so.
        if (method !== 'get') expect(Object.keys(operation.responses), at).toContain('403');
      }
  });
});
