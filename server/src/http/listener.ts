import type { Server } from 'node:http';

/**
 * Settings of the HTTP server itself, shared by main.ts and the tests: bounded header and request
 * times (slow clients cannot hold sockets), and a clear 405 for CONNECT, which Node would
 * otherwise answer by dropping the connection.
 */
export function configureServer(server: Server): Server {
  server.headersTimeout = 10_000;
  server.requestTimeout = 60_000;
  server.keepAliveTimeout = 5_000;
  server.on('connect', (_req, socket) => {
    socket.end(
      'HTTP/1.1 405 Method Not Allowed\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n' +
        '{"error":"invalid_request","message":"The method CONNECT is not allowed."}',
    );
  });
  return server;
}
