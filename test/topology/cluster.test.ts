import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { topologyScenarios } from './scenarios.ts';
import { redisCluster } from '../support/world.ts';
import { useTopology } from './topology.ts';

const ADMIN = fileURLToPath(new URL('../../server/src/admin.ts', import.meta.url));

const world = useTopology(redisCluster({ masters: 3 }));

describe('Redis Cluster (3 masters), three broker instances', () => {
  topologyScenarios(world);

  it('the admin CLI counts sessions and connections across every master', async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [ADMIN, 'stats'], {
      env: { PATH: process.env.PATH ?? '', ...world.env },
    });
    const stats = JSON.parse(stdout) as {
      sessions: number;
      connections: { byStatus: Record<string, number> };
    };
    // The scenarios made four sessions and signed one out, and removed one connection.
    expect(stats.sessions).toBe(3);
    expect(stats.connections.byStatus).toEqual({ connected: 2, disconnected: 0 });
  });
});
