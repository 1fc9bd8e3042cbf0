import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { KUBERNETES_DIR, type KubeObject } from '../support/kubernetes.ts';

/** The parts of a kustomization.yaml the tests read or change. */
export interface Kustomization {
  namespace?: string;
  resources?: string[];
  components?: string[];
  configMapGenerator?: Generator[];
  secretGenerator?: Generator[];
}
export interface Generator {
  name: string;
  behavior?: string;
  literals?: string[];
  options?: { disableNameSuffixHash?: boolean; annotations?: Record<string, string> };
}

/** An overlay's own kustomization.yaml, parsed. */
export const overlayKustomization = async (overlay: string): Promise<Kustomization> =>
  parse(
    await readFile(`${KUBERNETES_DIR}overlays/${overlay}/kustomization.yaml`, 'utf8'),
  ) as Kustomization;

/**
 * An overlay as an operator extends it: its kustomization with more `components` listed after its
 * own (deploy/kubernetes/components/<name>), rendered by `kubectl kustomize` as theirs would be.
 * The overlay's files are copied to a directory of the test's own, and every directory it names
 * (the base, the components) is pointed back at deploy/kubernetes/, since Kustomize takes no
 * absolute path. `edit` changes the copy's kustomization first (a secret rotated, a setting set).
 */
export async function renderWith(
  overlay: string,
  components: string[],
  edit: (kustomization: Kustomization) => void = () => {},
): Promise<KubeObject[]> {
  const from = `${KUBERNETES_DIR}overlays/${overlay}`;
  const dir = await mkdtemp(join(tmpdir(), `baton-kustomize-${overlay}-`));
  try {
    for (const entry of await readdir(from, { withFileTypes: true }))
      if (entry.isFile()) await copyFile(join(from, entry.name), join(dir, entry.name));
    const kustomization = parse(
      await readFile(join(from, 'kustomization.yaml'), 'utf8'),
    ) as Kustomization;
    const relocate = async (path: string): Promise<string> => {
      const absolute = resolve(from, path);
      return (await stat(absolute)).isDirectory() ? relative(dir, absolute) : path;
    };
    kustomization.resources = await Promise.all((kustomization.resources ?? []).map(relocate));
    kustomization.components = [
      ...(await Promise.all((kustomization.components ?? []).map(relocate))),
      ...components.map((name) => relative(dir, `${KUBERNETES_DIR}components/${name}`)),
    ];
    edit(kustomization);
    await writeFile(join(dir, 'kustomization.yaml'), stringify(kustomization));
    const { stdout } = await promisify(execFile)('kubectl', ['kustomize', dir], {
      maxBuffer: 16 * 1024 * 1024,
    });
    return parseAllDocuments(stdout).map((document) => {
      if (document.errors.length > 0) throw new Error(document.errors.join('\n'));
      return document.toJS() as KubeObject;
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
