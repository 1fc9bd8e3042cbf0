/**
 * A self-contained deployable folder: `node scripts/deploy.ts <dir>` (or `pnpm --filter
 * @baton/server deploy:folder <dir>`) builds dist/ and runs `pnpm deploy --prod` into <dir>, which
 * then holds dist/, package.json and the production node_modules, and runs with Node 24 alone:
 * `NODE_ENV=production node <dir>/dist/main.js`. <dir> must not exist or be empty.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const [target] = process.argv.slice(2);
if (target === undefined) {
  console.error('usage: deploy.ts <dir>');
  process.exit(2);
}
// pnpm runs package scripts in server/; a relative <dir> means where the command was typed.
const dir = resolve(process.env.INIT_CWD ?? process.cwd(), target);
const server = fileURLToPath(new URL('..', import.meta.url));
const run = (file: string, args: string[]): void => {
  execFileSync(file, args, { cwd: server, stdio: 'inherit' });
};

run(process.execPath, ['scripts/build.ts']);
run('pnpm', [
  '--filter',
  '@baton/server',
  'deploy',
  '--prod',
  '--config.confirm-modules-purge=false',
  dir,
]);
for (const file of [
  'dist/main.js',
  // The admin console, served from beside the bundle (src/http/admin/console/serve.ts).
  'dist/static/console.html',
  'dist/static/console.js',
  'node_modules/express/package.json',
]) {
  if (!existsSync(resolve(dir, file))) throw new Error(`the deployed folder lacks ${file}`);
}
console.log(`deployable folder ready: NODE_ENV=production node ${resolve(dir, 'dist/main.js')}`);
