/** The REST API on an ephemeral port of 127.0.0.1, for in-process HTTP tests. */
import type { Server } from "node:http";
import { createApp, type ApiDeps } from "../../src/app.js";

export interface RunningApi {
  base: string;
  close(): Promise<void>;
}

/** Starts `createApp(deps)`; returns its base URL and a close function. */
export function startApi(deps: ApiDeps): Promise<RunningApi> {
  const app = createApp(deps);
  return new Promise((resolve) => {
    const s: Server = app.listen(0, "127.0.0.1", () => {
      const a = s.address();
      resolve({
        base: `http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}`,
        close: () => new Promise<void>((r) => s.close(() => r())),
      });
    });
  });
}
