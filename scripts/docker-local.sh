#!/usr/bin/env bash
# Prepare this machine for Docker-based tests with NO container registry:
# only Debian's apt repository (and npm) can be reached here, so nothing may be
# pulled from Docker Hub. We install Debian's docker.io (and docker-compose v1
# when no compose works), start dockerd by hand (no systemd), and build once:
#   - a PostgreSQL 15 image from Debian packages,
#   - a Node 20 image: a Debian rootfs plus this machine's own node and npm
#     (Debian's nodejs is 18, too old),
# then (re)build the service image from the repository's Dockerfile on top of
# the Node image (Docker's layer cache makes an unchanged repo a no-op).
# Idempotent: a second run only checks and reuses what is already there.
#
# Usage: scripts/docker-local.sh   (as root)
# Env:   STRAGGLER_PG_IMAGE     PostgreSQL image (default straggler/postgres:15-local)
#        STRAGGLER_NODE_IMAGE   Node image       (default straggler/node:20-local)
#        STRAGGLER_IMAGE        service image    (default straggler/service:local)
#        STRAGGLER_BUILD_NETWORK  `docker build --network` for the service image
#                               (default: the bridge; set "host" if `npm ci` cannot
#                               reach the registry from the bridge network)
#        STRAGGLER_CA_BUNDLE    CA bundle copied into the Node image
#                               (default /etc/ssl/certs/ca-certificates.crt)
set -euo pipefail

PG_IMAGE="${STRAGGLER_PG_IMAGE:-straggler/postgres:15-local}"
NODE_IMAGE="${STRAGGLER_NODE_IMAGE:-straggler/node:20-local}"
SERVICE_IMAGE="${STRAGGLER_IMAGE:-straggler/service:local}"
BUILD_NETWORK="${STRAGGLER_BUILD_NETWORK:-}"
CA_BUNDLE="${STRAGGLER_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}"
# Raw debootstrap rootfs of an image: "a/b:tag" -> "a/b-rootfs:tag". The
# Dockerfile in docker/<name>/ adds ENV/CMD/entrypoint on top of it.
rootfs_of() {
  if [[ "${1##*/}" == *:* ]]; then printf '%s\n' "${1%:*}-rootfs:${1##*:}"
  else printf '%s\n' "${1}-rootfs:latest"; fi
}
BASE_IMAGE="$(rootfs_of "$PG_IMAGE")"
NODE_BASE_IMAGE="$(rootfs_of "$NODE_IMAGE")"
SUITE=bookworm
REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DOCKERD_LOG=/var/log/dockerd.log
DOCKERD_TIMEOUT="${DOCKERD_TIMEOUT:-60}"

log() { printf '[docker-local] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

# Run one named step and print how long it took.
step() {
  local name="$1"; shift
  local t0; t0=$(date +%s.%N)
  log "==> $name"
  "$@"
  log "<== $name: $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1fs", b-a}')"
}

[[ $EUID -eq 0 ]] || die "must run as root (apt-get, dockerd, debootstrap)"
# Temporary folders (rootfs, build contexts, logs): removed on exit, also when a step fails.
CLEANUP=()
trap 'rm -rf ${CLEANUP[@]+"${CLEANUP[@]}"}' EXIT

install_packages() {
  local missing=() cmd pkg
  # command -> Debian package. dockerd (not docker) is checked: the machine may
  # already have a bare docker CLI in /usr/local/bin without any engine.
  for pair in dockerd:docker.io debootstrap:debootstrap; do
    cmd="${pair%%:*}"; pkg="${pair#*:}"
    command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
  done
  if ((${#missing[@]} == 0)); then log "docker.io and debootstrap already installed"; return; fi
  log "installing: ${missing[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# `docker compose` (v2 plugin) or `docker-compose` v1 1.27+: Debian bookworm has
# no Compose v2 package (no docker-compose-v2 / docker-compose-plugin), only
# docker-compose 1.29.2. scripts/compose.sh picks whichever works and checks
# the version; it fails (never exits 0 doing nothing) when neither does.
install_compose() {
  local which
  if which="$(bash "$REPO_ROOT/scripts/compose.sh" --which 2>/dev/null)"; then log "compose available: $which"; return; fi
  log "installing: docker-compose"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker-compose >/dev/null
  which="$(bash "$REPO_ROOT/scripts/compose.sh" --which)" || die "no working Docker Compose after installing docker-compose"
  log "compose available: $which"
}

start_dockerd() {
  if docker info >/dev/null 2>&1; then log "dockerd already running"; return; fi
  if ! pgrep -x dockerd >/dev/null; then
    log "starting dockerd (log: $DOCKERD_LOG)"
    # /var/run is on disk here: a pid file left by an unclean stop (machine
    # reused after a restart) would make dockerd refuse to start.
    rm -f /var/run/docker.pid
    # No systemd here: run it detached so it outlives this script.
    nohup dockerd >"$DOCKERD_LOG" 2>&1 </dev/null &
    disown || true
  fi
  local i
  for ((i = 0; i < DOCKERD_TIMEOUT; i++)); do
    docker info >/dev/null 2>&1 && { log "dockerd ready"; return; }
    sleep 1
  done
  tail -n 20 "$DOCKERD_LOG" >&2 || true
  die "dockerd did not answer 'docker info' within ${DOCKERD_TIMEOUT}s (see $DOCKERD_LOG)"
}

# Print the URI of the apt source that serves "$SUITE main", read from this
# machine's own apt config (so no mirror host is hard-coded in the repo).
apt_mirror() {
  shopt -s nullglob
  local f
  # deb822 *.sources: paragraphs with Types/URIs/Suites/Components fields.
  for f in /etc/apt/sources.list.d/*.sources; do
    awk -v suite="$SUITE" 'BEGIN{RS=""; FS="\n"}
      { types=uris=suites=comps=""; enabled="yes"
        for (i = 1; i <= NF; i++) {
          if ($i ~ /^#/) continue
          k = tolower($i); sub(/:.*/, "", k); v = $i; sub(/^[^:]*:[ \t]*/, "", v)
          if (k == "types") types = v; else if (k == "uris") uris = v
          else if (k == "suites") suites = v; else if (k == "components") comps = v
          else if (k == "enabled") enabled = tolower(v)
        }
        if (enabled != "no" && (" " types " ") ~ / deb / && (" " suites " ") ~ (" " suite " ") \
            && (" " comps " ") ~ / main /) { split(uris, u, /[ \t]+/); print u[1]; exit }
      }' "$f"
  done
  # One-line format: deb [options] URI suite component...
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -r "$f" ]] || continue
    awk -v suite="$SUITE" '$1 == "deb" {
        i = 2; if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
        if ($(i + 1) != suite) next
        for (j = i + 2; j <= NF; j++) if ($j == "main") { print $i; exit } }' "$f"
  done
}

# debootstrap a minbase $SUITE rootfs with extra packages and import it as an image.
# Usage: build_rootfs_image IMAGE PACKAGES(comma-separated)
build_rootfs_image() {
  local image="$1" include="$2" mirror arch dir
  if docker image inspect "$image" >/dev/null 2>&1; then log "reusing $image"; return; fi
  mirror="$(apt_mirror | head -n 1)"
  [[ -n "$mirror" ]] || die "no apt source for '$SUITE main' in /etc/apt/sources.list{,.d}"
  arch="$(dpkg --print-architecture)"
  dir="$(mktemp -d /var/tmp/straggler-rootfs.XXXXXX)"
  CLEANUP+=("$dir" "$dir.log")
  log "debootstrap $SUITE ($arch) + $include from $mirror"
  debootstrap --variant=minbase --arch="$arch" --include="$include" \
    "$SUITE" "$dir" "$mirror" >"$dir.log" 2>&1 \
    || { tail -n 30 "$dir.log" >&2; die "debootstrap failed (full log: $dir.log)"; }
  # Slim the image: package caches, lists and docs are not needed at run time.
  rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/* \
    "$dir"/usr/share/doc/* "$dir"/usr/share/man/* "$dir"/usr/share/locale/*
  log "importing rootfs as $image"
  tar -C "$dir" -c . | docker import - "$image" >/dev/null
  rm -rf "$dir" "$dir.log"
}

build_base_image() { build_rootfs_image "$BASE_IMAGE" postgresql-15; }

# Legacy builder: it uses a local FROM image as-is and never contacts a
# registry (BuildKit may try to resolve the base image remotely). The build
# log is shown only on failure (with a "legacy builder is deprecated" notice).
# The outdated image this build untagged is removed (kept if a container uses it).
# Usage: docker_build IMAGE CONTEXT [docker build options...]
docker_build() {
  local image="$1" context="$2" out old; shift 2
  out="$(mktemp /var/tmp/straggler-build.XXXXXX)"; CLEANUP+=("$out")
  old="$(docker image inspect -f '{{.Id}}' "$image" 2>/dev/null || true)"
  if ! DOCKER_BUILDKIT=0 docker build --force-rm "$@" -t "$image" "$context" >"$out" 2>&1; then
    tail -n 40 "$out" >&2; die "docker build of $image failed"
  fi
  if [[ -n "$old" && "$old" != "$(docker image inspect -f '{{.Id}}' "$image")" ]]; then
    docker rmi "$old" >/dev/null 2>&1 || true
  fi
}

# Hash of docker/postgres/*, stored as an image label, so that an edited
# Dockerfile or entrypoint rebuilds the (cheap) top layer on machines that
# kept an older image, while the slow debootstrap base is still reused.
RECIPE_HASH="$(cat "$REPO_ROOT"/docker/postgres/* | sha256sum | cut -c1-16)"
pg_image_current() {
  [[ "$(docker image inspect -f '{{index .Config.Labels "straggler.recipe"}}' \
    "$PG_IMAGE" 2>/dev/null)" == "$RECIPE_HASH" ]]
}

build_pg_image() {
  docker_build "$PG_IMAGE" "$REPO_ROOT/docker/postgres" \
    --build-arg "BASE_IMAGE=$BASE_IMAGE" --label "straggler.recipe=$RECIPE_HASH"
  log "built $PG_IMAGE"
}

# The Node image: docker/node/Dockerfile over a minbase rootfs, with the
# host's node binary, npm and CA bundle. Its recipe hash covers all four, so a
# node upgrade on the host (or a new CA) rebuilds the cheap top layer.
NODE_BIN="$(command -v node || true)"
[[ -n "$NODE_BIN" ]] || die "no node on PATH: the local Node image copies the host's Node 20"
NODE_BIN="$(readlink -f "$NODE_BIN")"
NODE_MAJOR="$("$NODE_BIN" -p 'process.versions.node.split(".")[0]')"
((NODE_MAJOR >= 20)) || die "host node is $("$NODE_BIN" -v); Node 20 or later is needed"
NPM_DIR="$(readlink -f "$(dirname "$NODE_BIN")/../lib/node_modules/npm" || true)"
[[ -f "$NPM_DIR/bin/npm-cli.js" ]] || NPM_DIR="$(readlink -f "$(npm root -g)/npm")"
[[ -f "$NPM_DIR/bin/npm-cli.js" ]] || die "npm not found next to $NODE_BIN"
[[ -r "$CA_BUNDLE" ]] || die "CA bundle $CA_BUNDLE not readable (set STRAGGLER_CA_BUNDLE)"
NODE_RECIPE_HASH="$({ cat "$REPO_ROOT"/docker/node/*; sha256sum "$NODE_BIN" "$CA_BUNDLE" | cut -d' ' -f1
  cat "$NPM_DIR/package.json"; } | sha256sum | cut -c1-16)"
node_image_current() {
  [[ "$(docker image inspect -f '{{index .Config.Labels "straggler.recipe"}}' \
    "$NODE_IMAGE" 2>/dev/null)" == "$NODE_RECIPE_HASH" ]]
}

build_node_base_image() { build_rootfs_image "$NODE_BASE_IMAGE" ca-certificates; }

build_node_image() {
  local ctx; ctx="$(mktemp -d /var/tmp/straggler-node-ctx.XXXXXX)"; CLEANUP+=("$ctx")
  cp "$REPO_ROOT"/docker/node/* "$ctx"/
  cp "$NODE_BIN" "$ctx/node"
  cp -a "$NPM_DIR" "$ctx/npm"
  cp "$CA_BUNDLE" "$ctx/ca-certificates.crt"
  docker_build "$NODE_IMAGE" "$ctx" \
    --build-arg "BASE_IMAGE=$NODE_BASE_IMAGE" --label "straggler.recipe=$NODE_RECIPE_HASH"
  rm -rf "$ctx"
  log "built $NODE_IMAGE (node $("$NODE_BIN" -v), npm $("$NODE_BIN" -p "require('$NPM_DIR/package.json').version"))"
}

# The service image from the repository's Dockerfile (`.dockerignore` keeps
# the context to the runtime files). Always run: cached layers make it quick.
build_service_image() {
  docker_build "$SERVICE_IMAGE" "$REPO_ROOT" --build-arg "NODE_IMAGE=$NODE_IMAGE" \
    ${BUILD_NETWORK:+--network "$BUILD_NETWORK"}
  log "built $SERVICE_IMAGE ($(docker image inspect -f '{{.Id}}' "$SERVICE_IMAGE" | cut -c8-19))"
}

T0=$(date +%s.%N)
step "install docker.io + debootstrap" install_packages
step "start dockerd" start_dockerd
step "docker compose" install_compose
# If the final image is current the base is not needed (it may be pruned).
if pg_image_current; then
  log "reusing $PG_IMAGE (recipe $RECIPE_HASH)"
else
  step "build base rootfs image" build_base_image
  step "build $PG_IMAGE" build_pg_image
fi
if node_image_current; then
  log "reusing $NODE_IMAGE (recipe $NODE_RECIPE_HASH)"
else
  step "build Node base rootfs image" build_node_base_image
  step "build $NODE_IMAGE" build_node_image
fi
step "build $SERVICE_IMAGE" build_service_image
log "all done in $(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1fs", b-a}'); images: $PG_IMAGE $NODE_IMAGE $SERVICE_IMAGE"
