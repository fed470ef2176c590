/**
 * The docker-compose stack (docker-compose.yml) with the images under test:
 * `up -d` without building, the service's Docker health check (GET /readyz)
 * turns healthy, events arrive through the mounted landing folder and over HTTP
 * with the token given as a secret file, the service logs JSON on stdout, and
 * `down -v` leaves no container, volume (the database's and the data folder's)
 * or network of the project behind. Works with `docker compose` (v2) and `docker-compose` (v1).
 */
import { chmod, mkdir, mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, describe, expect, inject, it, onTestFailed } from "vitest";
import { check, composeCommand, PG_IMAGE, REPO_ROOT, run, since, waitFor } from "./docker.js";

const PROJECT = `straggler-e2e-${process.pid}`;
const TOKEN = "compose-e2e-token-0123456789";

/** A free TCP port on the host for the API. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const a = s.address();
      s.close(() => (typeof a === "object" && a ? resolve(a.port) : reject(new Error("no port"))));
    });
  });
}

let compose: (args: string[]) => Promise<string>;
let landing: string | undefined;
let up = false;

afterAll(async () => {
  // Whatever happened: leave nothing behind.
  if (up) await compose(["down", "-v", "--remove-orphans"]).catch((e) => console.error(String(e)));
  if (landing) await rm(landing, { recursive: true, force: true });
});

/** Containers, volumes and networks Docker still has for the project (by compose label and by name). */
async function leftovers(): Promise<string[]> {
  const label = `label=com.docker.compose.project=${PROJECT}`;
  const lists = await Promise.all([
    check("docker", ["ps", "-a", "--filter", label, "--format", "container {{.Names}}"]),
    check("docker", ["ps", "-a", "--filter", `name=${PROJECT}`, "--format", "container {{.Names}}"]),
    check("docker", ["volume", "ls", "--filter", label, "--format", "volume {{.Name}}"]),
    check("docker", ["volume", "ls", "--filter", `name=${PROJECT}`, "--format", "volume {{.Name}}"]),
    check("docker", ["network", "ls", "--filter", label, "--format", "network {{.Name}}"]),
    check("docker", ["network", "ls", "--filter", `name=${PROJECT}`, "--format", "network {{.Name}}"]),
  ]);
  return [...new Set(lists.flatMap((l) => l.split("\n").filter(Boolean)))].sort();
}

describe("docker-compose stack", () => {
  it("starts healthy with the local images, lands events from the folder and over HTTP, and `down -v` removes everything", async () => {
    const [cmd, ...pre] = await composeCommand();
    const port = await freePort();
    landing = await mkdtemp(path.join(tmpdir(), "straggler-landing-"));
    await mkdir(path.join(landing, "events"));
    // The service runs as uid 1000: the folders must be readable by others.
    await chmod(landing, 0o755);
    await chmod(path.join(landing, "events"), 0o755);
    // The token as a secret file (compose mounts it at /run/secrets/straggler_api_token), readable by uid 1000.
    const tokenFile = path.join(landing, "api-token");
    await writeFile(tokenFile, `${TOKEN}\n`, { mode: 0o644 });
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      STRAGGLER_PG_IMAGE: PG_IMAGE,
      STRAGGLER_IMAGE: inject("serviceImage"),
      STRAGGLER_API_TOKEN: "",
      STRAGGLER_API_TOKEN_FILE: tokenFile,
      STRAGGLER_HTTP_PORT: String(port),
      STRAGGLER_LANDING_DIR: landing,
      COMPOSE_PROJECT_NAME: PROJECT,
    };
    compose = (args) =>
      check(cmd, [...pre, "-p", PROJECT, "-f", path.join(REPO_ROOT, "docker-compose.yml"), ...args], { env });
    onTestFailed(async () =>
      console.error(
        `[e2e] compose logs:\n${(await run(cmd, [...pre, "-p", PROJECT, "-f", path.join(REPO_ROOT, "docker-compose.yml"), "logs", "--no-color"], { env })).stdout}`,
      ),
    );
    expect(await leftovers()).toEqual([]);

    const t0 = Date.now();
    up = true;
    await compose(["up", "-d", "--no-build"]);
    const upMs = since(t0);
    const serviceId = (await compose(["ps", "-q", "straggler"])).trim();
    const postgresId = (await compose(["ps", "-q", "postgres"])).trim();
    expect(serviceId).toMatch(/^[0-9a-f]{64}$/);
    const health = (id: string) =>
      check("docker", ["inspect", "--format", "{{.State.Health.Status}}", id]).then((s) => s.trim());
    await waitFor(
      "the straggler service to be healthy",
      () => health(serviceId),
      (s) => s === "healthy" || s === "unhealthy",
      180_000,
      250,
    );
    console.log(
      `[e2e] compose (${cmd}${pre.length ? " " + pre.join(" ") : ""}) up -d in ${upMs} ms; service healthy after ${since(t0)} ms`,
    );
    expect([await health(postgresId), await health(serviceId)]).toEqual(["healthy", "healthy"]);
    const images = await check("docker", ["inspect", "--format", "{{.Config.Image}}", postgresId, serviceId]);
    expect(images.trim().split("\n")).toEqual([PG_IMAGE, inject("serviceImage")]);

    const api = `http://127.0.0.1:${port}`;
    const h = await fetch(`${api}/health`);
    expect([h.status, await h.json()]).toEqual([200, { status: "ok", database: "reachable" }]);
    const probes = await Promise.all(["/livez", "/readyz"].map(async (p) => (await fetch(`${api}${p}`)).json()));
    expect(probes).toEqual([
      { status: "ok" },
      { status: "ready", database: "reachable", migrations: "applied", pending: [] },
    ]);
    const mounts = await check("docker", [
      "inspect",
      "--format",
      "{{range .Mounts}}{{.Destination}} {{.Type}}\n{{end}}",
      serviceId,
    ]);
    expect(mounts.trim().split("\n").sort()).toEqual([
      "/app/.straggler volume",
      "/data/landing bind",
      "/etc/straggler/pipelines.yaml bind",
      "/run/secrets/straggler_api_token bind",
    ]);

    // A file in the mounted landing folder (written under a "_" name, then renamed).
    const file =
      [
        '{"event_time": "2026-10-01T12:00:10Z", "amount": 1.5}',
        '{"event_time": "2026-10-01T12:00:50Z", "amount": 2.25}',
        '{"event_time": "2026-10-01T12:01:20Z", "amount": 4}',
      ].join("\n") + "\n";
    await writeFile(path.join(landing, "events", "_batch-1.jsonl"), file, { mode: 0o644 });
    await rename(path.join(landing, "events", "_batch-1.jsonl"), path.join(landing, "events", "batch-1.jsonl"));
    type W = { window_start: string; event_count: number; value_sum: string; status: string };
    const windows = async () =>
      ((await (await fetch(`${api}/pipelines/events/windows`)).json()) as W[]).map((w) => [
        w.window_start,
        w.event_count,
        w.value_sum,
        w.status,
      ]);
    // Watermark 12:01:20 - 30 s = 12:00:50: both windows stay open.
    expect(await waitFor("the landed file's windows", windows, (w) => w.length === 2, 60_000, 250)).toEqual([
      ["2026-10-01T12:00:00.000Z", 2, "3.75", "open"],
      ["2026-10-01T12:01:00.000Z", 1, "4", "open"],
    ]);

    // An event over HTTP with the token from the environment: watermark 12:04:30 finalizes both.
    const denied = await fetch(`${api}/pipelines/events/events`, {
      method: "POST",
      headers: { authorization: "Bearer wrong-token-0123456789" },
      body: "{}",
    });
    expect(denied.status).toBe(401);
    const posted = await fetch(`${api}/pipelines/events/events`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
      body: '{"event_time": "2026-10-01T12:05:00Z", "amount": 10}\n',
    });
    expect([posted.status, (await posted.json()).accepted]).toEqual([201, 1]);
    expect(
      await waitFor("the posted event's window", windows, (w) => w.length === 3 && w[0]![3] === "final", 60_000, 250),
    ).toEqual([
      ["2026-10-01T12:00:00.000Z", 2, "3.75", "final"],
      ["2026-10-01T12:01:00.000Z", 1, "4", "final"],
      ["2026-10-01T12:05:00.000Z", 1, "10", "open"],
    ]);

    // Logs: JSON lines on stdout, nothing on stderr.
    const logs = await run("docker", ["logs", serviceId]);
    // (The default database password is `straggler`: a secret, so the word is redacted from every log line.)
    const messages = logs.stdout
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => (JSON.parse(l) as { msg: string }).msg);
    expect(
      ["[Redacted] service started", "file landed", "batch committed"].filter((m) => !messages.includes(m)),
    ).toEqual([]);
    expect(logs.stderr).toBe("");

    const t1 = Date.now();
    await compose(["down", "-v"]);
    up = false;
    console.log(`[e2e] compose down -v in ${since(t1)} ms`);
    expect(await leftovers()).toEqual([]);
  });
});
