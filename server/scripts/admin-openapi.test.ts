import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { ADMIN_API_BASE, ADMIN_ROUTES } from '../src/http/admin/routes.ts';
import { ADMIN_OPENAPI_PATH, renderAdminOpenApi } from './admin-openapi.ts';
import { documentChecks } from './openapi-checks.ts';

type Operation = { security?: Record<string, unknown>[]; responses: Record<string, unknown> };
type Document = {
  paths: Record<string, Record<string, Operation>>;
  servers: { url: string; variables?: Record<string, unknown> }[];
  components: { schemas: object };
};

const published = async (): Promise<Document> =>
  JSON.parse(await readFile(ADMIN_OPENAPI_PATH, 'utf8')) as Document;

describe('docs/admin-openapi.json', () => {
  documentChecks({
    path: ADMIN_OPENAPI_PATH,
    render: renderAdminOpenApi,
    command: 'pnpm --filter @baton/server admin-openapi',
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
