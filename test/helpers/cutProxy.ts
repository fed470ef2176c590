/**
 * A TCP proxy in front of PostgreSQL that a test can cut: every connection
 * through it is destroyed and new ones are refused, as when the database or
 * the network goes away while the server itself keeps running.
 */
import net from "node:net";

export interface CutProxy {
  /** `databaseUrl` with host and port pointing at the proxy. */
  url: string;
  /** Destroys every open connection and stops accepting new ones. */
  cut(): Promise<void>;
}

/** Starts a proxy to the host and port of `databaseUrl` on a free local port. */
export async function startCutProxy(databaseUrl: string): Promise<CutProxy> {
  const target = new URL(databaseUrl);
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("error", () => undefined);
      s.on("close", () => sockets.delete(s));
    }
    client.pipe(upstream).pipe(client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  const url = new URL(databaseUrl);
  url.hostname = "127.0.0.1";
  url.port = String(port);
  return {
    url: url.toString(),
    cut: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}
