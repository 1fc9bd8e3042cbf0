/**
 * `pnpm release`: everything a release publishes, built from this checkout into one folder,
 * release/<build version>/ (git-ignored; docs/releasing.md):
 *
 *   baton-extension-<v>-chrome.zip, -firefox.zip, -sources.zip   the store packages, checked as
 *                                   the stores will (as `pnpm --filter @baton/extension release`)
 *   baton-broker-<v>.tar.gz         the deployable folder (server/scripts/deploy.ts): dist/ and the
 *                                   production node_modules; `NODE_ENV=production node dist/main.js`
 *   baton-broker-<v>.cdx.json       its SBOM (CycloneDX, every package with its declared licence)
 *   baton-broker-<v>.image.tar.gz   the image (`docker load`), tagged baton-broker:<version> (what
 *                                   deploy/kubernetes names) and baton-broker:<build version, + as ->
 *   baton-broker-<v>.image.cdx.json the image's SBOM: its Debian and npm packages
 *   SHA256SUMS                      of every other file (`sha256sum -c SHA256SUMS`)
 *
 * <v> is the build version (scripts/version.ts): `1.1.0` from a release commit, `1.1.0-dev+abc1234`
 * between releases. Needs WXT_BROKER_URL and WXT_GECKO_ID (the store packages' broker and Firefox
 * add-on id; WXT_API_ORIGINS when the integrator's pages call the API), a committed working tree
 * (what is built is what the revision says), and for the image a running Docker engine.
 *
 *   node scripts/release.ts [--no-image] [--out <dir>] [--allow-dirty]
 */
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { parseArgs, promisify } from 'node:util';
import { createGzip } from 'node:zlib';
import { describeBuild, generateSbom, schemaErrors, type Bom } from '../test/support/sbom.ts';
import { repositoryUrl } from './changelog.ts';
import { currentBuild, ROOT } from './version.ts';

const run = promisify(execFile);

/** What the store packages are built with; both required (extension/src/release.ts checks them). */
export const EXTENSION_VARIABLES = ['WXT_BROKER_URL', 'WXT_GECKO_ID'] as const;

/** A Docker tag may not hold `+`: the build metadata follows a `-` there. */
export const dockerTag = (version: string): string => version.replace('+', '-');

function step(text: string): void {
  console.log(`== release: ${text}`);
}

/** Runs a command with its output shown; rejects with its status. */
function shown(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv = {},
  cwd = ROOT,
): Promise<void> {
  return new Promise((done, fail) => {
    const child = spawn(command, args, {
      cwd,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    child.once('error', fail);
    child.once('exit', (code, signal) =>
      code === 0
        ? done()
        : fail(new Error(`${command} ${args.join(' ')} failed (${signal ?? `status ${code}`})`)),
    );
  });
}

/** `command` piped into a gzip file. */
async function gzipped(command: string, args: string[], file: string): Promise<void> {
  const child = spawn(command, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  await pipeline(child.stdout, createGzip({ level: 6 }), createWriteStream(file));
  const code = await exited;
  if (code !== 0) throw new Error(`${command} ${args.slice(0, 2).join(' ')} failed (${code})`);
}

async function writeSbom(bom: Bom, file: string): Promise<void> {
  const text = `${JSON.stringify(bom, null, 2)}\n`;
  const errors = await schemaErrors(text);
  if (errors !== null)
    throw new Error(`${file} is not valid CycloneDX: ${JSON.stringify(errors).slice(0, 2000)}`);
  await writeFile(file, text);
}

async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { withFileTypes: true, recursive: true });
  return entries
    .filter((entry) => entry.isFile())
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)))
    .sort();
}

async function sha256(file: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(file), hash);
  return hash.digest('hex');
}

/**
 * The store packages: what `pnpm --filter @baton/extension release` makes (BATON_RELEASE=1, WXT's
 * zip for Chrome and for Firefox MV3, then scripts/release-check.ts), but built into a folder of
 * its own through WXT's API: extension/.output/ holds the unpacked development builds that
 * `pnpm start` and the end-to-end tests load, which a store build there would replace.
 */
async function extension(out: string, buildVersion: string, revision: string): Promise<void> {
  step('the extension: the store packages, checked as the stores will');
  const dir = join(ROOT, 'extension');
  const zips = await mkdtemp(join(tmpdir(), 'baton-release-extension-'));
  try {
    const env = { BATON_RELEASE: '1', BATON_REVISION: revision };
    for (const browser of ['chrome', 'firefox']) {
      const options = JSON.stringify({ browser, manifestVersion: 3, outDir: zips });
      const code = `const { zip } = await import('wxt'); await zip(${options});`;
      await shown(process.execPath, ['--input-type=module', '-e', code], env, dir);
    }
    await shown(process.execPath, ['scripts/release-check.ts', zips], env, dir);
    const files = await readdir(zips);
    for (const kind of ['chrome', 'firefox', 'sources']) {
      // WXT names them after the package (`batonextension-…`).
      const found = files.filter((file) => file.endsWith(`-${buildVersion}-${kind}.zip`));
      if (found.length !== 1 || found[0] === undefined)
        throw new Error(`expected one *-${buildVersion}-${kind}.zip: ${files.join(', ')}`);
      await copyFile(
        join(zips, found[0]),
        join(out, `baton-extension-${buildVersion}-${kind}.zip`),
      );
    }
  } finally {
    await rm(zips, { recursive: true, force: true });
    // WXT wrote that folder into .wxt/tsconfig.json's exclusions: prepare it as a build here would.
    await shown('pnpm', ['exec', 'wxt', 'prepare'], {}, dir).catch((error: unknown) =>
      console.error(`release: wxt prepare: ${(error as Error).message}`),
    );
  }
}

/** The deployable folder as a tarball, and its SBOM. */
async function broker(out: string, buildVersion: string, revision: string): Promise<void> {
  step('the broker: the deployable folder and its SBOM');
  const work = await mkdtemp(join(tmpdir(), 'baton-release-'));
  try {
    const name = `baton-broker-${buildVersion}`;
    const folder = join(work, name);
    await shown(process.execPath, ['server/scripts/deploy.ts', folder], {
      BATON_REVISION: revision,
      INIT_CWD: work,
    });
    const info = JSON.parse(await readFile(join(folder, 'dist/build-info.json'), 'utf8')) as {
      version?: string;
    };
    if (info.version !== buildVersion)
      throw new Error(`the deployable folder says ${info.version}, not ${buildVersion}`);
    const { bom } = await generateSbom('js', folder);
    describeBuild(bom, buildVersion);
    await writeSbom(bom, join(out, `${name}.cdx.json`));
    await gzipped(
      'tar',
      ['-c', '--sort=name', '--owner=0', '--group=0', '--numeric-owner', '-C', work, name],
      join(out, `${name}.tar.gz`),
    );
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** The image, built from server/Dockerfile, saved, and its SBOM from its exported filesystem. */
async function image(
  out: string,
  build: { version: string; revision: string; buildVersion: string },
): Promise<void> {
  step('the image: server/Dockerfile, docker save, and its SBOM');
  await run('docker', ['info', '--format', '{{.ServerVersion}}'], { timeout: 30_000 }).catch(
    (error: unknown) => {
      throw new Error(
        'the image needs a running Docker engine (docker info fails); start one, or pass --no-image for everything else',
        { cause: error },
      );
    },
  );
  const manifest = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as object;
  // The version's tag (what deploy/kubernetes names), and the build's when it says more.
  const primary = `baton-broker:${build.version}`;
  const tags = [...new Set([primary, `baton-broker:${dockerTag(build.buildVersion)}`])];
  await shown('docker', [
    'build',
    '--network',
    'host',
    '--build-arg',
    `VERSION=${build.buildVersion}`,
    '--build-arg',
    `REVISION=${build.revision}`,
    '--build-arg',
    `SOURCE=${repositoryUrl(manifest)}`,
    '-f',
    'server/Dockerfile',
    ...tags.flatMap((tag) => ['-t', tag]),
    '.',
  ]);
  const { stdout } = await run('docker', [
    'image',
    'inspect',
    '--format',
    '{{json .Config.Labels}}',
    primary,
  ]);
  const labels = JSON.parse(stdout) as Record<string, string>;
  if (labels['org.opencontainers.image.version'] !== build.buildVersion)
    throw new Error(`the image's version label is not ${build.buildVersion}: ${stdout}`);
  const name = `baton-broker-${build.buildVersion}`;
  await gzipped('docker', ['save', ...tags], join(out, `${name}.image.tar.gz`));

  const rootfs = await mkdtemp(join(tmpdir(), 'baton-release-rootfs-'));
  const container = (await run('docker', ['create', primary])).stdout.trim();
  try {
    await run(
      'sh',
      ['-c', `docker export "${container}" | tar -C "${rootfs}" -x --no-same-owner`],
      {
        timeout: 600_000,
      },
    );
    const { bom } = await generateSbom('rootfs', rootfs);
    bom.metadata.component = {
      type: 'container',
      name: 'baton-broker',
      version: build.buildVersion,
      'bom-ref': `baton-broker@${build.buildVersion}`,
    };
    await writeSbom(bom, join(out, `${name}.image.cdx.json`));
  } finally {
    await run('docker', ['rm', container]);
    await rm(rootfs, { recursive: true, force: true });
  }
}

export async function release(argv: string[], env: NodeJS.ProcessEnv): Promise<string> {
  const { values } = parseArgs({
    args: argv,
    options: {
      'no-image': { type: 'boolean', default: false },
      'allow-dirty': { type: 'boolean', default: false },
      out: { type: 'string' },
    },
  });
  const missing = EXTENSION_VARIABLES.filter((name) => (env[name] ?? '').trim() === '');
  if (missing.length > 0)
    throw new Error(
      `pnpm release builds the store packages with WXT_BROKER_URL (the https broker they talk to) and WXT_GECKO_ID (the Firefox add-on id): set ${missing.join(' and ')}`,
    );
  const dirty = (await run('git', ['status', '--porcelain'], { cwd: ROOT })).stdout.trim();
  if (dirty !== '' && !values['allow-dirty'])
    throw new Error(
      `the working tree has changes, so no revision says what would be built: commit them (or pass --allow-dirty for a trial):\n${dirty.split('\n').slice(0, 10).join('\n')}`,
    );
  const build = currentBuild(ROOT, env);
  const out = resolve(
    env['INIT_CWD'] ?? process.cwd(),
    values.out ?? join(ROOT, 'release', build.buildVersion),
  );
  await mkdir(out, { recursive: true });
  if ((await readdir(out)).length > 0) throw new Error(`${out} is not empty`);
  step(
    `${build.buildVersion} (revision ${build.revision}${dirty === '' ? '' : ', with uncommitted changes'}) into ${out}`,
  );

  await extension(out, build.buildVersion, build.revision);
  await broker(out, build.buildVersion, build.revision);
  if (values['no-image']) step('no image (--no-image)');
  else await image(out, build);

  step('SHA256SUMS');
  const sums: string[] = [];
  for (const file of await filesUnder(out)) sums.push(`${await sha256(join(out, file))}  ${file}`);
  await writeFile(join(out, 'SHA256SUMS'), `${sums.join('\n')}\n`);
  console.log(sums.join('\n'));
  step(`done: ${out}`);
  return out;
}

if (import.meta.filename === process.argv[1]) {
  await release(process.argv.slice(2), process.env).catch((error: unknown) => {
    console.error(`release: ${(error as Error).message}`);
    process.exit(1);
  });
}
