/**
 * The service image the end-to-end tests run. `STRAGGLER_IMAGE` names an
 * image that must already exist (scripts/docker-local.sh builds
 * `straggler/service:local` where no registry is reachable; test-here.sh sets
 * the variable). Without it, the working tree is built here as
 * `straggler/service:local` with `docker build` (base image: the Dockerfile's
 * default `node:20-bookworm-slim`, or `NODE_IMAGE`), so the tests always run
 * the code they sit next to.
 */
import type { TestProject } from "vitest/node";
import { check, DEFAULT_SERVICE_IMAGE, REPO_ROOT, run, since } from "./docker.js";

declare module "vitest" {
  export interface ProvidedContext {
    serviceImage: string;
  }
}

export default async function setup(project: TestProject): Promise<void> {
  let image = process.env.STRAGGLER_IMAGE;
  if (image) {
    const r = await run("docker", ["image", "inspect", "--format", "{{.Id}}", image]);
    if (r.code !== 0)
      throw new Error(
        `STRAGGLER_IMAGE=${image}: no such image here (build it with scripts/docker-local.sh or docker build -t ${image} .)\n${r.stderr}`,
      );
    console.log(`[e2e] service image ${image} (${r.stdout.trim().slice(7, 19)})`);
  } else {
    image = DEFAULT_SERVICE_IMAGE;
    const t0 = Date.now();
    const args = [
      "build",
      "-t",
      image,
      ...(process.env.NODE_IMAGE ? ["--build-arg", `NODE_IMAGE=${process.env.NODE_IMAGE}`] : []),
      ".",
    ];
    await check("docker", args, { cwd: REPO_ROOT });
    console.log(`[e2e] built ${image} from ${REPO_ROOT} in ${since(t0)} ms`);
  }
  project.provide("serviceImage", image);
}
