#!/usr/bin/env bash
# Docker Compose on this repository's stack (docker-compose.yml), whichever
# Compose is installed: `docker compose` (v2) or `docker-compose` (v1, 1.27 or
# later; Debian bookworm has only v1, 1.29.2). Fails with the reason when
# neither works: a docker CLI without the compose plugin reads
# `docker compose down -v` as `docker -v`, prints its version and exits 0.
#
# Usage: scripts/compose.sh ARGS...     e.g. scripts/compose.sh down -v
#        scripts/compose.sh --which     print the Compose command and version
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

MIN_V1=1.27.0
die() { printf 'compose.sh: %s\n' "$*" >&2; exit 1; }

if docker compose version >/dev/null 2>&1; then
  cmd=(docker compose); version="$(docker compose version --short)"
elif command -v docker-compose >/dev/null 2>&1; then
  version="$(docker-compose version --short 2>/dev/null)" || die "docker-compose does not run: $(docker-compose version 2>&1 | head -n 1)"
  [[ "$(printf '%s\n%s\n' "$MIN_V1" "$version" | sort -V | head -n 1)" == "$MIN_V1" ]] \
    || die "docker-compose $version is too old: the stack needs 1.27 or later (or Compose v2)"
  cmd=(docker-compose)
else
  die "no Docker Compose: neither \`docker compose\` (v2) nor \`docker-compose\` (v1) runs; scripts/docker-local.sh installs Debian's docker-compose"
fi

if [[ "${1:-}" == "--which" ]]; then echo "${cmd[*]} $version"; exit 0; fi
exec "${cmd[@]}" "$@"
