import { createServer, type Server, type Socket } from 'node:net';

/** An "attacker" on its own port that counts every connection it receives, and answers nothing useful. */
export class AttackerListener {
  connections = 0;
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  port = 0;

  private constructor(server: Server) {
    this.#server = server;
  }

  static async start(): Promise<AttackerListener> {
    const server = createServer();
    const listener = new AttackerListener(server);
    server.on('connection', (socket) => {
      listener.connections++;
      listener.#sockets.add(socket);
      socket.on('close', () => listener.#sockets.delete(socket));
      socket.on('error', () => {});
      socket.end(
        'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}',
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    listener.port = (server.address() as { port: number }).port;
    return listener;
  }

  get origin(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
