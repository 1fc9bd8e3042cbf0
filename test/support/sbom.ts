import { Spec, Validation } from '@cyclonedx/cyclonedx-library';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/**
 * CycloneDX SBOMs: made by cdxgen (OWASP CycloneDX's generator; its Linux plugins bring the tool
 * that reads a root filesystem's Debian packages), checked against the CycloneDX JSON schema by
 * @cyclonedx/cyclonedx-library's validator.
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
}

export interface Bom {
  bomFormat: 'CycloneDX';
  specVersion: string;
  metadata: { component?: Component; tools?: { components?: Component[] } };
  components: Component[];
}

/**
 * cdxgen on `dir`, as `type`: `js` reads a deployed folder's lockfile and node_modules, `rootfs` a
 * container's exported filesystem (its OS packages and whatever language packages it holds). Runs
 * offline: no install, no license look-up.
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
    const text = await readFile(out, 'utf8');
    return { bom: JSON.parse(text) as Bom, text };
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
