import { SPDX, Spec, Validation } from '@cyclonedx/cyclonedx-library';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/**
 * CycloneDX SBOMs: made by cdxgen (OWASP CycloneDX's generator; its Linux plugins bring the tool
 * that reads a root filesystem's Debian packages), with each npm package's declared licence where
 * cdxgen missed it (addDeclaredLicences), checked against the CycloneDX JSON schema by
 * @cyclonedx/cyclonedx-library's validator. `pnpm release` (scripts/release.ts) makes the
 * release's SBOMs with these functions, and the tests check them.
 */
const CDXGEN = fileURLToPath(new URL('../node_modules/.bin/cdxgen', import.meta.url));
/** What cdxgen writes by default, and what the validator below checks. */
const SPEC = Spec.Version.v1dot7;

export interface Component {
  type: string;
  name: string;
  group?: string;
  version?: string;
  purl?: string;
  scope?: string;
  licenses?: Licence[];
  'bom-ref'?: string;
}

/** A CycloneDX licence choice: an SPDX id, a name, or (alone) an SPDX expression. */
export type Licence = { license: { id: string } | { name: string } } | { expression: string };

export interface Bom {
  bomFormat: 'CycloneDX';
  specVersion: string;
  metadata: { component?: Component; tools?: { components?: Component[] } };
  components: Component[];
  dependencies?: { ref: string; dependsOn?: string[] }[];
}

/**
 * cdxgen on `dir`, as `type`: `js` reads a deployed folder's lockfile and node_modules, `rootfs` a
 * container's exported filesystem (its OS packages and whatever language packages it holds). Runs
 * offline: no install, no license look-up; the licences are what each package declares.
 */
export async function generateSbom(
  type: 'js' | 'rootfs',
  dir: string,
): Promise<{ bom: Bom; text: string }> {
  const work = await mkdtemp(join(tmpdir(), 'baton-sbom-'));
  const out = join(work, 'bom.json');
  try {
    await promisify(execFile)(
      CDXGEN,
      ['--type', type, '--no-install-deps', '--spec-version', SPEC, '--output', out, dir],
      {
        cwd: work,
        timeout: 600_000,
        maxBuffer: 64 * 1024 * 1024,
        env: {
          ...process.env,
          FETCH_LICENSE: 'false',
          CDXGEN_TEMP_DIR: work,
          // It prints a summary table otherwise, which nobody reads here.
          CI: 'true',
        },
      },
    );
    const bom = JSON.parse(await readFile(out, 'utf8')) as Bom;
    await addDeclaredLicences(bom, dir);
    return { bom, text: JSON.stringify(bom, null, 2) };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}

/** The schema's complaints about `text` (a CycloneDX JSON document), or null when it is valid. */
export async function schemaErrors(text: string): Promise<unknown> {
  return new Validation.JsonStrictValidator(SPEC).validate(text);
}

/** `name@version` of every component whose package URL is of `kind` (npm, deb). */
export function packages(bom: Bom, kind: 'npm' | 'deb'): Set<string> {
  const found = new Set<string>();
  for (const component of bom.components) {
    if (!component.purl?.startsWith(`pkg:${kind}/`)) continue;
    const name = component.group ? `${component.group}/${component.name}` : component.name;
    found.add(`${name}@${component.version ?? ''}`);
  }
  return found;
}

/** Writes `bom` to test-results/sbom/<name>, where a release takes it from. */
export async function keepSbom(bom: Bom, name: string): Promise<void> {
  const dir = fileURLToPath(new URL('../../test-results/sbom/', import.meta.url));
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, name), `${JSON.stringify(bom, null, 2)}\n`);
}

/** `name@version` of an npm component, as its package.json names it. */
const npmKey = (component: Component): string =>
  `${component.group ? `${component.group}/` : ''}${component.name}@${component.version ?? ''}`;

/** The licences a package.json declares: `license` (an SPDX expression, or npm's old `{ type }`) or the old `licenses` array. */
export function declaredIn(manifest: { license?: unknown; licenses?: unknown }): string[] {
  const one = (value: unknown): string | undefined =>
    typeof value === 'string'
      ? value
      : typeof value === 'object' && value !== null && 'type' in value
        ? String(value.type)
        : undefined;
  const found =
    manifest.license !== undefined
      ? [one(manifest.license)]
      : Array.isArray(manifest.licenses)
        ? manifest.licenses.map(one)
        : [];
  return found.filter((value): value is string => value !== undefined && value.trim() !== '');
}

/** CycloneDX's form of declared licences: SPDX ids as ids, an expression alone, others by name. */
export function asLicences(declared: readonly string[]): Licence[] {
  const [only] = declared;
  if (declared.length === 1 && only !== undefined && /\s(AND|OR|WITH)\s/.test(only))
    return [{ expression: only }];
  return declared.map((value) => {
    const id = SPDX.fixupSpdxId(value);
    return id === undefined ? { license: { name: value } } : { license: { id } };
  });
}

/**
 * `name@version` of every npm package installed under `dir` (every `node_modules`, pnpm's `.pnpm`
 * store included; symbolic links not followed), with the licences its package.json declares.
 */
export async function declaredLicences(dir: string): Promise<Map<string, string[]>> {
  const found = new Map<string, string[]>();
  const visit = async (folder: string, parents: string[]): Promise<void> => {
    const entries = await readdir(folder, { withFileTypes: true }).catch(() => []);
    // A package's folder: node_modules/<name> or node_modules/@scope/<name>.
    const isPackage =
      parents.at(-2) === 'node_modules' ||
      (parents.at(-3) === 'node_modules' && parents.at(-2)?.startsWith('@') === true);
    if (isPackage && entries.some((entry) => entry.isFile() && entry.name === 'package.json')) {
      try {
        const manifest = JSON.parse(await readFile(join(folder, 'package.json'), 'utf8')) as {
          name?: unknown;
          version?: unknown;
          license?: unknown;
          licenses?: unknown;
        };
        if (typeof manifest.name === 'string' && typeof manifest.version === 'string')
          found.set(`${manifest.name}@${manifest.version}`, declaredIn(manifest));
      } catch {
        // Not a package's manifest (a fixture, a template): nothing to learn from it.
      }
    }
    for (const entry of entries)
      if (entry.isDirectory()) await visit(join(folder, entry.name), [...parents, entry.name]);
  };
  await visit(dir, []);
  return found;
}

/**
 * Gives every npm component without a licence the one its package.json declares. cdxgen 12.8
 * reads a pnpm package's manifest at node_modules/.pnpm/<name>@<version>/, but pnpm names the
 * folder of a package installed with peer dependencies <name>@<version>_<peers>: those (35 of
 * the broker's 175) came out with none. Returns how many it filled in.
 */
export async function addDeclaredLicences(bom: Bom, dir: string): Promise<number> {
  const missing = bom.components.filter(
    (component) => component.purl?.startsWith('pkg:npm/') && !component.licenses?.length,
  );
  if (missing.length === 0) return 0;
  const declared = await declaredLicences(dir);
  let filled = 0;
  for (const component of missing) {
    const licences = asLicences(declared.get(npmKey(component)) ?? []);
    if (licences.length === 0) continue;
    component.licenses = licences;
    filled += 1;
  }
  return filled;
}

/**
 * The SBOM's subject as the build it describes: `version` (the build version, which the
 * package.json cdxgen read does not carry) in its version, package URL and reference.
 */
export function describeBuild(bom: Bom, version: string): void {
  const subject = bom.metadata.component;
  if (subject === undefined) throw new Error('the SBOM names no subject (metadata.component)');
  subject.version = version;
  if (subject.purl !== undefined)
    subject.purl = subject.purl.replace(/@[^@/?#]*(?=$|[?#])/, `@${encodeURIComponent(version)}`);
  const before = subject['bom-ref'];
  if (before === undefined) return;
  const after = before.replace(/@[^@/]*$/, `@${version}`);
  subject['bom-ref'] = after;
  for (const dependency of bom.dependencies ?? []) {
    if (dependency.ref === before) dependency.ref = after;
    if (dependency.dependsOn !== undefined)
      dependency.dependsOn = dependency.dependsOn.map((ref) => (ref === before ? after : ref));
  }
}
