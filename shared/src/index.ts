export * from './contracts.ts';
export * from './errors.ts';
export * from './pkce.ts';
export * from './dev-extension.ts';
export * from './proxy-path.ts';
export * from './retry-after.ts';
