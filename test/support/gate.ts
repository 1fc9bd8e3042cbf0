import {
  createServer,
  request,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

interface Hold {
  match: (req: IncomingMessage) => boolean;
  arrived: () => void;
  released: Promise<void>;
}

/**
 * A forwarding HTTP proxy in front of the sandbox, on its own port, that a test can stop in its
 * tracks: `holdAnswer` lets the next matching request reach the sandbox (which acts on it) and
 * keeps the sandbox's answer until the test releases it. A license whose api_url points here can
 * be driven into "the provider rotated, and the broker hears about it later" on purpose.
 */
export class Gate {
  readonly #server: Server;
  readonly #target: URL;
  readonly #sockets = new Set<Socket>();
  #holds: Hold[] = [];
  requests = 0;
  port = 0;

  private constructor(server: Server, target: URL) {
    this.#server = server;
    this.#target = target;
  }

  static async start(target: string): Promise<Gate> {
    const server = createServer();
    const gate = new Gate(server, new URL(target));
    server.on('request', (req, res) => gate.#forward(req, res));
    server.on('connection', (socket) => {
      gate.#sockets.add(socket);
      socket.on('close', () => gate.#sockets.delete(socket));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    gate.port = (server.address() as AddressInfo).port;
    return gate;
  }

  get origin(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Keep the sandbox's answer to the next request matching `match` until `release()`. */
  holdAnswer(match: (req: IncomingMessage) => boolean): {
    arrived: Promise<void>;
    release: () => void;
  } {
    let release!: () => void;
    let arrived!: () => void;
    const hold: Hold = {
      match,
      arrived: () => arrived(),
      released: new Promise<void>((resolve) => (release = resolve)),
    };
    const arrival = new Promise<void>((resolve) => (arrived = resolve));
    this.#holds.push(hold);
    return { arrived: arrival, release };
  }

  #forward(req: IncomingMessage, res: ServerResponse): void {
    this.requests++;
    const hold = this.#holds.find((candidate) => candidate.match(req));
    if (hold) this.#holds = this.#holds.filter((other) => other !== hold);
    const upstream = request(
      {
        host: this.#target.hostname,
        port: this.#target.port,
        method: req.method,
        path: req.url,
        headers: { ...req.headers, host: this.#target.host },
      },
      (answer) => {
        const send = () => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        };
        if (!hold) return send();
        hold.arrived();
        void hold.released.then(send);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }
}
