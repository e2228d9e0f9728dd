#!/usr/bin/env bash
# Start the real services the test suite uses (Debian's PostgreSQL and Redis), installing
# them with apt when missing. Idempotent; prints the URLs to use.
set -euo pipefail
need=()
command -v pg_ctlcluster >/dev/null 2>&1 && ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  fi
fi
ver=$(ls /usr/lib/postgresql | sort -n | tail -1)
if ! pg_lsclusters -h 2>/dev/null | grep -q .; then
  pg_createcluster "$ver" main >/dev/null
fi
cluster=$(pg_lsclusters -h | head -1)
cver=$(echo "$cluster" | awk '{print $1}'); cname=$(echo "$cluster" | awk '{print $2}'); cport=$(echo "$cluster" | awk '{print $3}')
pg_ctlcluster "$cver" "$cname" start >/dev/null 2>&1 || true
for _ in $(seq 1 50); do pg_isready -q -p "$cport" && break; sleep 0.2; done
runuser -u postgres -- psql -q -p "$cport" -tc "SELECT 1 FROM pg_roles WHERE rolname='svc_test'" | grep -q 1 \
  || runuser -u postgres -- psql -q -p "$cport" -c "CREATE ROLE svc_test LOGIN SUPERUSER PASSWORD 'svc_test'"
runuser -u postgres -- psql -q -p "$cport" -tc "SELECT 1 FROM pg_database WHERE datname='svc_test'" | grep -q 1 \
  || runuser -u postgres -- createdb -p "$cport" -O svc_test svc_test
echo "SVC_TEST_PG_URL=postgresql+psycopg://svc_test:svc_test@127.0.0.1:${cport}/svc_test"
