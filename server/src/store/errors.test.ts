import { SimpleError } from 'redis';
import { describe, expect, it } from 'vitest';
import { isStoreDown } from './errors.ts';

describe('isStoreDown', () => {
  it.each([
    'CLUSTERDOWN The cluster is down',
    'TRYAGAIN Multiple keys request during rehashing of slot',
    'LOADING Redis is loading the dataset in memory',
    'MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to no',
    "READONLY You can't write against a read only replica.",
  ])('knows Redis’s reply %j as the store down for now (503, not 500)', (message) => {
    expect(isStoreDown(new SimpleError(message))).toBe(true);
  });

  it('knows a connection the store dropped under a command (the socket’s own error) as the store down', () => {
    // As node-redis hands it to the sign-in's session store when a Cluster node is killed.
    const reset = Object.assign(new Error('read ECONNRESET'), {
      code: 'ECONNRESET',
      errno: -104,
      syscall: 'read',
    });
    expect(isStoreDown(reset)).toBe(true);
    expect(isStoreDown(Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }))).toBe(true);
  });

  it('leaves a file system error to be a server error', () => {
    expect(isStoreDown(Object.assign(new Error('open failed'), { code: 'ENOENT' }))).toBe(false);
  });

  it('leaves a reply about the command itself to be an error of the request', () => {
    expect(isStoreDown(new SimpleError('WRONGTYPE Operation against a key'))).toBe(false);
    expect(isStoreDown(new SimpleError('ERR unknown command'))).toBe(false);
  });
});
