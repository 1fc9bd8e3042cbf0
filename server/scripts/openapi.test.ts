import { describe } from 'vitest';
import { documentChecks } from './openapi-checks.ts';
import { OPENAPI_PATH, renderOpenApi } from './openapi.ts';

describe('docs/openapi.json', () => {
  documentChecks({
    path: OPENAPI_PATH,
    render: renderOpenApi,
    command: 'pnpm --filter @baton/server openapi',
  });
});
