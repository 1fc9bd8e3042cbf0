import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { once } from 'node:events';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type TLSSocket } from 'node:tls';

/** A throwaway self-signed certificate for 127.0.0.1 (openssl), and where its PEM lives. */
export interface TestCertificate {
  key: string;
  cert: string;
  /** The certificate as a file, for NODE_EXTRA_CA_CERTS. */
  certFile: string;
  dir: string;
}

export async function selfSignedCertificate(): Promise<TestCertificate> {
  const dir = await mkdtemp(join(tmpdir(), 'baton-tls-'));
  const keyFile = join(dir, 'key.pem');
  const certFile = join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      keyFile,
      '-out',
      certFile,
    ],
    { stdio: 'ignore' },
  );
  return {
    key: await readFile(keyFile, 'utf8'),
    cert: await readFile(certFile, 'utf8'),
    certFile,
    dir,
  };
}

export interface TlsTerminator extends AsyncDisposable {
  /** `https://127.0.0.1:<port>` */
  url: string;
  port: number;
  close(): Promise<void>;
}

/**
 * A TLS-terminating loopback proxy: accepts TLS with `certificate` and pipes the plaintext bytes
 * to `127.0.0.1:<targetPort>`, as a load balancer in front of a plain HTTP service would.
 */
export async function startTlsTerminator(
  certificate: TestCertificate,
  targetPort: number,
): Promise<TlsTerminator> {
  const sockets = new Set<Socket>();
  const server = createServer({ key: certificate.key, cert: certificate.cert }, (client) => {
    const upstream = connect(targetPort, '127.0.0.1');
    const pair: [TLSSocket, Socket] = [client, upstream];
    for (const socket of pair) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => pair.forEach((each) => each.destroy()));
    }
    client.pipe(upstream).pipe(client);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const close = async (): Promise<void> => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return { url: `https://127.0.0.1:${port}`, port, close, [Symbol.asyncDispose]: close };
}

export async function removeCertificate(certificate: TestCertificate): Promise<void> {
  await rm(certificate.dir, { recursive: true, force: true });
}
