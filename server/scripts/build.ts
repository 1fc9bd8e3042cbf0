/**
 * The production build: plain JavaScript in dist/, one file per entry point. Every npm dependency
 * stays an import (the deployable folder carries it in node_modules); `@baton/shared`, a workspace
 * package that exports TypeScript source, is bundled in, because Node refuses to strip types under
 * node_modules. Type checking is `tsc` (pnpm typecheck); this only emits.
 *
 * dist/build-info.json records what was built, for `baton_build_info`: the package's version and
 * the git revision, `BATON_REVISION` when set (the image build, whose context has no .git) or else
 * `git rev-parse HEAD`. The broker reads that file at start-up, never git.
 */
import { execFileSync } from 'node:child_process';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { build } from 'rolldown';

const root = fileURLToPath(new URL('..', import.meta.url));
const manifest = JSON.parse(await readFile(`${root}package.json`, 'utf8')) as {
  version: string;
  dependencies: Record<string, string>;
};
/** Runtime dependencies; `@baton/shared` is a devDependency, bundled in. */
const external = Object.keys(manifest.dependencies);
const isExternal = (id: string): boolean =>
  id.startsWith('node:') || external.some((name) => id === name || id.startsWith(`${name}/`));

/** The commit being built: a full hash, or the build stops (a release must say what it is). */
function revision(): string {
  const given = process.env['BATON_REVISION'];
  let found: string;
  try {
    found =
      given === undefined || given === ''
        ? execFileSync('git', ['rev-parse', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim()
        : given;
  } catch (error) {
    throw new Error(
      'no git revision: build from a git checkout, or set BATON_REVISION to the commit (the image build takes it as --build-arg REVISION)',
      { cause: error },
    );
  }
  if (!/^[0-9a-f]{40}$/.test(found))
    throw new Error(`the revision must be a full commit hash (40 hex digits): ${found}`);
  return found;
}

const buildInfo = { version: manifest.version, revision: revision() };
await rm(`${root}dist`, { recursive: true, force: true });
await build({
  input: { main: `${root}src/main.ts`, admin: `${root}src/admin.ts` },
  platform: 'node',
  external: isExternal,
  output: { dir: `${root}dist`, format: 'esm', sourcemap: true, entryFileNames: '[name].js' },
});
await writeFile(`${root}dist/build-info.json`, `${JSON.stringify(buildInfo, null, 2)}\n`);
