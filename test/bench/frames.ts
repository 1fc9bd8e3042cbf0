/** A V8 profile's call frame (CPU or heap), as profile.ts and alloc.ts summarise it. */
export interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

/**
 * Where a frame's cost is counted: its function (`name file:line`) and its package (an npm
 * package, the broker's own code, Node core, or a native function), paths made relative to `root`.
 */
export function placeOf(frame: CallFrame, root: string): { fn: string; pkg: string } {
  const where = frame.url.replace(/^file:\/\//, '').replace(root, '');
  const fn = `${frame.functionName || '(anonymous)'} ${where.split('/').slice(-2).join('/')}:${frame.lineNumber + 1}`;
  const pkg =
    /node_modules\/\.pnpm\/([^/]+)\//.exec(where)?.[1]?.replace(/@[\d.]+.*$/, '') ??
    (where.startsWith('server/')
      ? 'broker (server/src)'
      : where.startsWith('node:')
        ? 'node core'
        : where === ''
          ? `(${frame.functionName || 'native'})`
          : where.split('/')[0]!);
  return { fn, pkg };
}
