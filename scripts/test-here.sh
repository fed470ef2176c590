#!/usr/bin/env bash
# Runs the test suite through Testcontainers on a machine that can reach no
# container registry: installs and starts Docker and builds the PostgreSQL
# image from Debian packages (scripts/docker-local.sh), then runs vitest
# against that image. Extra arguments go to vitest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/docker-local.sh
export STRAGGLER_TEST_PG_IMAGE="${STRAGGLER_PG_IMAGE:-straggler/postgres:15-local}"
# Ryuk (the reaper) is an image from Docker Hub; the suite stops its own container.
export TESTCONTAINERS_RYUK_DISABLED=true
# Keep test traffic on loopback and skip the in-container gateway probe (it pulls an image).
export TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1
unset TEST_DATABASE_URL
exec npx vitest run "$@"
