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

  it('leaves a reply about the command itself to be an error of the request', () => {
    expect(isStoreDown(new SimpleError('WRONGTYPE Operation against a key'))).toBe(false);
    expect(isStoreDown(new SimpleError('ERR unknown command'))).toBe(false);
  });
});
