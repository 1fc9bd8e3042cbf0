import { execFileSync } from 'node:child_process';

/**
 * Vitest global setup for the suites that need real programs: fail the run at once, saying how to
 * install what is missing, rather than skipping anything.
 */
const TOOLS: Record<string, string> = {
  'redis-server': 'apt-get install redis-server',
  'redis-cli': 'apt-get install redis-tools',
  'redis-sentinel': 'apt-get install redis-sentinel',
  openssl: 'apt-get install openssl',
  promtool: 'apt-get install prometheus',
};

export default function requireTools(): void {
  const missing = Object.keys(TOOLS).filter((tool) => !onPath(tool));
  if (missing.length > 0) {
    throw new Error(
      `These tests need ${missing.join(', ')} on PATH. Install with: ${missing
        .map((tool) => TOOLS[tool])
        .join(' && ')} (or run bash .ci/run, which installs everything).`,
    );
  }
}

export function onPath(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
