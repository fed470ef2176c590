#!/bin/sh
# Minimal stand-in for the official postgres image's entrypoint.
# Env: POSTGRES_USER (default postgres), POSTGRES_PASSWORD (required unless
# POSTGRES_HOST_AUTH_METHOD=trust), POSTGRES_DB (default = user),
# POSTGRES_HOST_AUTH_METHOD (default scram-sha-256), POSTGRES_INITDB_ARGS.
# On first start it inits $PGDATA using a temporary server and then starts the
# real one, so "database system is ready to accept connections" is logged
# twice, exactly as the official image does (Testcontainers waits for both).
set -eu

# `docker run img -c fsync=off` -> `postgres -c fsync=off`
case "${1:-}" in -*) set -- postgres "$@" ;; esac

# Started as root (the default, like the official image): fix ownership of a
# possibly freshly mounted $PGDATA, then re-run this script as the postgres OS
# user (setpriv from util-linux plays the role of the official image's gosu).
if [ "${1:-}" = postgres ] && [ "$(id -u)" = 0 ]; then
  mkdir -p "$PGDATA" /var/run/postgresql
  chown -R postgres:postgres "$PGDATA" /var/run/postgresql
  chmod 700 "$PGDATA"
  exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

if [ "${1:-}" = postgres ] && [ ! -s "$PGDATA/PG_VERSION" ]; then
  POSTGRES_USER="${POSTGRES_USER:-postgres}"
  POSTGRES_DB="${POSTGRES_DB:-$POSTGRES_USER}"
  AUTH="${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}"
  if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "$AUTH" != trust ]; then
    echo "Error: database is uninitialized and superuser password is not specified." >&2
    echo "       Set POSTGRES_PASSWORD (or POSTGRES_HOST_AUTH_METHOD=trust)." >&2
    exit 1
  fi

  mkdir -p "$PGDATA" && chmod 700 "$PGDATA"
  pwfile="$(mktemp)"
  printf '%s\n' "${POSTGRES_PASSWORD:-}" >"$pwfile"
  # shellcheck disable=SC2086  # POSTGRES_INITDB_ARGS is a word list
  initdb --username="$POSTGRES_USER" --pwfile="$pwfile" ${POSTGRES_INITDB_ARGS:-}
  rm -f "$pwfile"

  # Password auth for TCP connections from anywhere; listen on all addresses.
  printf '\nhost all all all %s\n' "$AUTH" >>"$PGDATA/pg_hba.conf"
  printf "\nlisten_addresses = '*'\n" >>"$PGDATA/postgresql.conf"

  # Temporary server on the Unix socket only, so clients cannot connect early.
  pg_ctl -D "$PGDATA" -w -o "-c listen_addresses=''" start
  export PGUSER="$POSTGRES_USER" PGHOST=/var/run/postgresql
  if [ "$POSTGRES_DB" != postgres ]; then
    psql -v ON_ERROR_STOP=1 --dbname postgres --set db="$POSTGRES_DB" <<'SQL'
CREATE DATABASE :"db";
SQL
  fi
  for f in /docker-entrypoint-initdb.d/*; do
    case "$f" in
      *.sh) echo "running $f"; . "$f" ;;
      *.sql) echo "running $f"; psql -v ON_ERROR_STOP=1 --dbname "$POSTGRES_DB" -f "$f" ;;
      *) if [ -e "$f" ]; then echo "ignoring $f"; fi ;;
    esac
  done
  pg_ctl -D "$PGDATA" -m fast -w stop
  unset PGUSER PGHOST
  echo
  echo "PostgreSQL init process complete; ready for start up."
  echo
fi

exec "$@"
