#!/usr/bin/env node
// The `straggler` command: runs the TypeScript sources through tsx (no build step).
import { register } from "tsx/esm/api";

register();
await import("../src/cli/main.ts");
