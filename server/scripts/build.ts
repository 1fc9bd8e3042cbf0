/**
 * The production build: plain JavaScript in dist/, one file per entry point. Every npm dependency
 * stays an import (the deployable folder carries it in node_modules); `@baton/shared`, a workspace
 * package that exports TypeScript source, is bundled in, because Node refuses to strip types under
 * node_modules. Type checking is `tsc` (pnpm typecheck); this only emits.
 *
 * dist/build-info.json records what was built, for `baton_build_info`: the build version (the
 * workspace's, with `+<short revision>` between releases: scripts/version.ts) and the git revision,
 * `BATON_REVISION` when set (the image build, whose context has no .git) or else
 * `git rev-parse HEAD`. The broker reads that file at start-up, never git.
 *
 * dist/static/ is the admin console's page and modules (src/http/admin/console/static/), copied as
 * they are: the console's router finds them at `./static/` beside the bundle, as it does beside
 * itself in the source.
 */
import { cp, readFile, rm, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { build } from 'rolldown';
import { currentBuild } from '../../scripts/version.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const manifest = JSON.parse(await readFile(`${root}package.json`, 'utf8')) as {
  dependencies: Record<string, string>;
};
/** Runtime dependencies; `@baton/shared` is a devDependency, bundled in. */
const external = Object.keys(manifest.dependencies);
const isExternal = (id: string): boolean =>
  id.startsWith('node:') || external.some((name) => id === name || id.startsWith(`${name}/`));

const { buildVersion, revision } = currentBuild();
const buildInfo = { version: buildVersion, revision };
await rm(`${root}dist`, { recursive: true, force: true });
await build({
  input: { main: `${root}src/main.ts`, admin: `${root}src/admin.ts` },
  platform: 'node',
  external: isExternal,
  output: { dir: `${root}dist`, format: 'esm', sourcemap: true, entryFileNames: '[name].js' },
});
await cp(`${root}src/http/admin/console/static`, `${root}dist/static`, { recursive: true });
await writeFile(`${root}dist/build-info.json`, `${JSON.stringify(buildInfo, null, 2)}\n`);
