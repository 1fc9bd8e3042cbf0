import type { TestProject } from 'vitest/node';
import { buildImage, BUILD_ARGS, docker, ensureBaseImage, ensureDockerd, IMAGE } from './docker.ts';

/**
 * The image suite's world: a Docker engine (started here when none runs, and then stopped here),
 * the stand-in base image (made once, kept), and server/Dockerfile built afresh for this run.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const engine = await ensureDockerd();
  const baseMs = await ensureBaseImage();
  const buildMs = await buildImage(false);
  const size = Number(await docker(['image', 'inspect', '--format', '{{.Size}}', IMAGE]));
  console.log(
    `[image] ${engine.started ? 'dockerd started for the suite' : 'the running dockerd'}; base image ${
      baseMs === 0 ? 'cached' : `made in ${(baseMs / 1000).toFixed(0)} s`
    }; ${IMAGE} built in ${(buildMs / 1000).toFixed(0)} s, ${(size / 1e6).toFixed(0)} MB`,
  );
  project.provide('imageBuildMs', buildMs);
  // What this build was given, for the tests to find in the image (HEAD may move meanwhile).
  project.provide('imageBuildArgs', BUILD_ARGS);
  return async () => {
    await engine.stop();
  };
}

declare module 'vitest' {
  export interface ProvidedContext {
    imageBuildMs: number;
    imageBuildArgs: typeof BUILD_ARGS;
  }
}
