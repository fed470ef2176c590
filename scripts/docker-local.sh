#!/usr/bin/env bash
# Prepare this machine for Docker-based tests with NO container registry:
# only Debian's apt repository (and npm) can be reached here, so nothing may be
# pulled from Docker Hub. We install Debian's docker.io, start dockerd by hand
# (no systemd), and build a PostgreSQL 15 image from Debian packages once.
# Idempotent: a second run only checks and reuses what is already there.
#
# Usage: scripts/docker-local.sh   (as root)
# Env:   STRAGGLER_PG_IMAGE  image to build (default straggler/postgres:15-local)
set -euo pipefail

PG_IMAGE="${STRAGGLER_PG_IMAGE:-straggler/postgres:15-local}"
# Raw debootstrap rootfs; the Dockerfile adds ENV/CMD/entrypoint on top of it.
if [[ "${PG_IMAGE##*/}" == *:* ]]; then BASE_IMAGE="${PG_IMAGE%:*}-rootfs:${PG_IMAGE##*:}"
else BASE_IMAGE="${PG_IMAGE}-rootfs:latest"; fi
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
ROOTFS_DIR=""
trap '[[ -z "$ROOTFS_DIR" ]] || rm -rf "$ROOTFS_DIR"' EXIT

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

build_base_image() {
  if docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then log "reusing $BASE_IMAGE"; return; fi
  local mirror arch dir
  mirror="$(apt_mirror | head -n 1)"
  [[ -n "$mirror" ]] || die "no apt source for '$SUITE main' in /etc/apt/sources.list{,.d}"
  arch="$(dpkg --print-architecture)"
  dir="$(mktemp -d /var/tmp/straggler-pg-rootfs.XXXXXX)"
  ROOTFS_DIR="$dir"  # removed by the EXIT trap, also when a step fails
  log "debootstrap $SUITE ($arch) + postgresql-15 from $mirror"
  debootstrap --variant=minbase --arch="$arch" --include=postgresql-15 \
    "$SUITE" "$dir" "$mirror" >"$dir.log" 2>&1 \
    || { tail -n 30 "$dir.log" >&2; die "debootstrap failed (full log: $dir.log)"; }
  rm -f "$dir.log"
  # Slim the image: package caches, lists and docs are not needed at run time.
  rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/* \
    "$dir"/usr/share/doc/* "$dir"/usr/share/man/* "$dir"/usr/share/locale/*
  log "importing rootfs as $BASE_IMAGE"
  tar -C "$dir" -c . | docker import - "$BASE_IMAGE" >/dev/null
  rm -rf "$dir"; ROOTFS_DIR=""
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
  # Legacy builder: it uses the local FROM image as-is and never contacts a
  # registry (BuildKit may try to resolve the base image remotely).
  # Its stderr (a "legacy builder is deprecated" notice) is shown only on failure.
  local err old; err="$(mktemp)"
  old="$(docker image inspect -f '{{.Id}}' "$PG_IMAGE" 2>/dev/null || true)"
  if ! DOCKER_BUILDKIT=0 docker build -q --build-arg "BASE_IMAGE=$BASE_IMAGE" \
    --label "straggler.recipe=$RECIPE_HASH" \
    -t "$PG_IMAGE" "$REPO_ROOT/docker/postgres" >/dev/null 2>"$err"; then
    cat "$err" >&2; rm -f "$err"; die "docker build of $PG_IMAGE failed"
  fi
  rm -f "$err"
  # Drop the outdated image this build untagged (kept if a container uses it).
  if [[ -n "$old" && "$old" != "$(docker image inspect -f '{{.Id}}' "$PG_IMAGE")" ]]; then
    docker rmi "$old" >/dev/null 2>&1 || true
  fi
  log "built $PG_IMAGE"
}

T0=$(date +%s.%N)
step "install docker.io + debootstrap" install_packages
step "start dockerd" start_dockerd
# If the final image is current the base is not needed (it may be pruned).
if pg_image_current; then
  log "reusing $PG_IMAGE (recipe $RECIPE_HASH)"
else
  step "build base rootfs image" build_base_image
  step "build $PG_IMAGE" build_pg_image
fi
log "all done in $(awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1fs", b-a}'); image: $PG_IMAGE"
