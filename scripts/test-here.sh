#!/usr/bin/env bash
# Runs the test suite through Testcontainers on a machine that can reach no
# container registry: installs Debian's Chromium (the browser test) and
# nats-server (the NATS source's tests) when missing,
# installs and starts Docker and builds the PostgreSQL,
# Node and service images from Debian packages and the host's Node
# (scripts/docker-local.sh), then runs vitest against those images, then the
# end-to-end tests (`npm run test:e2e`: service container, docker-compose).
# Extra arguments go to the main vitest run. Exits non-zero if either fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# The browser test (test/browser) drives Debian's Chromium, and the NATS source's
# tests start Debian's nats-server (JetStream): install what is missing.
missing=()
[[ -x /usr/bin/chromium ]] || missing+=(chromium)
[[ -x /usr/sbin/nats-server ]] || missing+=(nats-server)
# promtool (the metrics and alert-rule tests) comes with Debian's prometheus package.
command -v promtool >/dev/null || missing+=(prometheus)
if ((${#missing[@]} > 0)); then
  SUDO=(); ((EUID == 0)) || SUDO=(sudo)
  "${SUDO[@]}" apt-get update -qq
  "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  # The prometheus package may start its server; the tests need only promtool.
  [[ " ${missing[*]} " != *" prometheus "* ]] || "${SUDO[@]}" pkill -x prometheus || true
fi
bash scripts/docker-local.sh
export STRAGGLER_TEST_PG_IMAGE="${STRAGGLER_PG_IMAGE:-straggler/postgres:15-local}"
# The service image docker-local.sh built (the e2e tests use it as is).
export STRAGGLER_IMAGE="${STRAGGLER_IMAGE:-straggler/service:local}"
# Ryuk (the reaper) is an image from Docker Hub; the suite stops its own container.
export TESTCONTAINERS_RYUK_DISABLED=true
# Keep test traffic on loopback and skip the in-container gateway probe (it pulls an image).
export TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1
unset TEST_DATABASE_URL
main=0 e2e=0
npx vitest run "$@" || main=$?
npm run test:e2e || e2e=$?
if ((main != 0 || e2e != 0)); then
  echo "test-here: main suite exit $main, e2e exit $e2e" >&2
  exit 1
fi
