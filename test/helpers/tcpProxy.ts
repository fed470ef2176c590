/**
 * A TCP proxy in front of PostgreSQL that a test can break on purpose:
 *
 * - `cut()` destroys every open connection and refuses new ones, as when the
 *   database or the network goes away while the server itself keeps running;
 * - `arm(mode)` cuts the next connection that sends COMMIT, once. It watches
 *   the client's bytes for the simple-query message `Q <len> COMMIT\0` and
 *   either forwards it and destroys both sockets before the server's answer is
 *   relayed (`after`: the COMMIT reaches the server, its answer never reaches
 *   the client), or destroys them without forwarding it (`before`: the
 *   transaction cannot commit);
 * - `silence()` drops every byte both ways from then on, and a close on one
 *   side no longer closes the other, as a network that goes quiet without a
 *   reset does: neither end notices until a timeout of its own.
 */
import net from "node:net";

/** `Q`, int32 length 11 (4 + "COMMIT\0"), "COMMIT\0". */
const COMMIT_MESSAGE = Buffer.concat([Buffer.from("Q"), Buffer.from([0, 0, 0, 11]), Buffer.from("COMMIT\0")]);

export interface TcpProxy {
  /** `targetUrl` with host and port pointing at the proxy. */
  url: string;
  /** Cuts the next connection that sends COMMIT, once. */
  arm(mode: "after" | "before"): void;
  /** Connections cut at a COMMIT so far. */
  cuts(): number;
  /** Destroys every open connection and stops accepting new ones. */
  cut(): Promise<void>;
  /** Drops every byte both ways from now on; connections stay open. */
  silence(): void;
  /** The same as `cut`, for clean-up. */
  close(): Promise<void>;
}

/** Starts a proxy to the host and port of `targetUrl` on a free local port. */
export async function startProxy(targetUrl: string): Promise<TcpProxy> {
  const target = new URL(targetUrl);
  let armed: "after" | "before" | undefined;
  let silent = false;
  let cuts = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    const cut = () => {
      client.destroy();
      upstream.destroy();
    };
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("error", () => undefined);
      s.on("close", () => sockets.delete(s));
    }
    // Once silent, a close does not travel either: each end finds out by its own timeout.
    client.on("close", () => silent || upstream.destroy());
    upstream.on("close", () => silent || client.destroy());
    upstream.on("data", (d) => silent || client.write(d));
    client.on("data", (d: Buffer) => {
      if (silent) return;
      if (armed !== undefined && d.includes(COMMIT_MESSAGE)) {
        const mode = armed;
        armed = undefined;
        cuts++;
        if (mode === "before") return cut();
        // Stop relaying answers at once, then cut when the COMMIT has been handed to the kernel.
        upstream.removeAllListeners("data");
        upstream.write(d, () => cut());
        return;
      }
      upstream.write(d);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = new URL(targetUrl);
  url.hostname = "127.0.0.1";
  url.port = String((server.address() as net.AddressInfo).port);
  let closed: Promise<void> | undefined;
  const close = () => {
    closed ??= new Promise<void>((resolve) => server.close(() => resolve()));
    for (const s of sockets) s.destroy();
    return closed;
  };
  return {
    url: url.toString(),
    arm: (mode) => (armed = mode),
    cuts: () => cuts,
    silence: () => (silent = true),
    cut: close,
    close,
  };
}
