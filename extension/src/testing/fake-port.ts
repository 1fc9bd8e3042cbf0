import type { MessageSender } from '../background/senders.ts';

/** An event of a fake port: listeners added and removed, fired in the order they were added. */
export class FakePortEvent<A extends unknown[]> {
  private readonly listeners = new Set<(...args: A) => void>();
  addListener(listener: (...args: A) => void): void {
    this.listeners.add(listener);
  }
  removeListener(listener: (...args: A) => void): void {
    this.listeners.delete(listener);
  }
  fire(...args: A): void {
    for (const listener of [...this.listeners]) listener(...args);
  }
}

/** One end of a `runtime.Port`. */
export interface FakePort {
  readonly name: string;
  /** Set on the background's end: who opened the port, as the browser says it. */
  readonly sender?: MessageSender;
  readonly onMessage: FakePortEvent<[unknown]>;
  readonly onDisconnect: FakePortEvent<[]>;
  postMessage(message: unknown): void;
  disconnect(): void;
  /** Whether this end may still post (neither end disconnected). */
  readonly open: boolean;
}

/**
 * The two ends of a port, as the browser makes them (WXT's fake browser has no `runtime.connect`):
 * a message posted on one end arrives at the other's `onMessage` a moment later, never at once and
 * in order; disconnecting one end tells the other's `onDisconnect` (not its own), after what was
 * posted before; an end disconnected either way throws on `postMessage`, as Chrome's does.
 */
export function portPair(
  name: string,
  sender: MessageSender,
): { page: FakePort; background: FakePort } {
  let open = true;
  const end = (withSender: MessageSender | undefined): FakePort & { other?: FakePort } => {
    const port: FakePort & { other?: FakePort } = {
      name,
      ...(withSender !== undefined && { sender: withSender }),
      onMessage: new FakePortEvent<[unknown]>(),
      onDisconnect: new FakePortEvent<[]>(),
      get open() {
        return open;
      },
      postMessage(message) {
        if (!open) throw new Error('Attempting to use a disconnected port object');
        const copy: unknown = structuredClone(message);
        queueMicrotask(() => port.other?.onMessage.fire(copy));
      },
      disconnect() {
        if (!open) return;
        open = false;
        queueMicrotask(() => port.other?.onDisconnect.fire());
      },
    };
    return port;
  };
  const page = end(undefined);
  const background = end(sender);
  page.other = background;
  background.other = page;
  return { page, background };
}

/**
 * `runtime.connect` for a page whose sender is `sender()`, wired to the background's
 * `runtime.onConnect` listener; `ports` lists every pair it made, newest last.
 */
export function connectTo(onConnect: (port: FakePort) => void, sender: () => MessageSender) {
  const ports: { page: FakePort; background: FakePort }[] = [];
  return {
    ports,
    connect({ name }: { name: string }): FakePort {
      const pair = portPair(name, sender());
      ports.push(pair);
      onConnect(pair.background);
      return pair.page;
    },
  };
}

/** Lets every message and disconnection already posted arrive. */
export const delivered = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 0));
