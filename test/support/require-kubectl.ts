import { onPath } from './require-tools.ts';

/**
 * Vitest global setup for the suites that render deploy/kubernetes/: kubectl, whose Kustomize
 * renders it as an operator would, must be there (every machine image here has it; Debian's
 * kubernetes-client is too old for Kustomize components). A failure, never a skip.
 */
export default function requireKubectl(): void {
  if (!onPath('kubectl'))
    throw new Error(
      'These tests render deploy/kubernetes/ with `kubectl kustomize`: put kubectl 1.27 or later (Kustomize 5) on PATH.',
    );
}
