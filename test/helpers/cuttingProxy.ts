/**
 * A TCP proxy between a client and PostgreSQL that can cut a connection at a
 * COMMIT: it watches the client's bytes for the simple-query message
 * `Q <len> COMMIT\0` and, when armed, either forwards it and then destroys
 * both sockets before the server's answer is relayed (`after`: the COMMIT
 * reaches the server, its answer never reaches the client), or destroys them
 * without forwarding it (`before`: the transaction cannot commit).
 */
import net from "node:net";

/** `Q`, int32 length 11 (4 + "COMMIT\0"), "COMMIT\0". */
const COMMIT_MESSAGE = Buffer.concat([Buffer.from("Q"), Buffer.from([0, 0, 0, 11]), Buffer.from("COMMIT\0")]);

export interface CuttingProxy {
  /** A connection URL like `target`, through the proxy. */
  url: string;
  /** Cuts the next connection that sends COMMIT, once. */
  arm(mode: "after" | "before"): void;
  /** Connections cut so far. */
  cuts(): number;
  close(): Promise<void>;
}

export async function startCuttingProxy(targetUrl: string): Promise<CuttingProxy> {
  const target = new URL(targetUrl);
  let armed: "after" | "before" | undefined;
  let cuts = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    sockets.add(client).add(upstream);
    const cut = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
    client.on("error", () => undefined);
    upstream.on("error", () => undefined);
    upstream.on("data", (d) => client.write(d));
    client.on("data", (d: Buffer) => {
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
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  const a = server.address() as net.AddressInfo;
  const url = new URL(targetUrl);
  url.hostname = "127.0.0.1";
  url.port = String(a.port);
  return {
    url: url.toString(),
    arm: (mode) => (armed = mode),
    cuts: () => cuts,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
