import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * Which of `pids` holds the loopback TCP connection from `peerPort` to `localPort` (a connection
 * this process accepted on `localPort`), from Linux's /proc: the socket's inode in /proc/net/tcp,
 * then the process whose file descriptors name it. So the provider tap knows which broker process
 * presented a refresh token, with the brokers' code unchanged. Undefined when it cannot tell (not
 * Linux, the process gone already).
 */
export function socketOwner(
  peerPort: number,
  localPort: number,
  pids: readonly number[],
): number | undefined {
  const inode = socketInode(peerPort, localPort);
  if (inode === undefined) return undefined;
  const wanted = `socket:[${inode}]`;
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`) === wanted) return pid;
      } catch {
        // closed meanwhile
      }
    }
  }
  return undefined;
}

/** The inode of the socket whose local port is `localPort` and remote port `remotePort`. */
function socketInode(localPort: number, remotePort: number): string | undefined {
  const hex = (port: number) => port.toString(16).toUpperCase().padStart(4, '0');
  const local = `:${hex(localPort)}`;
  const remote = `:${hex(remotePort)}`;
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'latin1');
    } catch {
      continue;
    }
    for (const line of text.split('\n')) {
      const fields = line.trim().split(/\s+/);
      if (fields[1]?.endsWith(local) && fields[2]?.endsWith(remote) && fields[9] !== '0')
        return fields[9];
    }
  }
  return undefined;
}
