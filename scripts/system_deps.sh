#!/usr/bin/env bash
# The Debian packages the product starts itself (never mocks): Chromium for the browser test, and Redis and
# PostgreSQL for the scale-out cluster (`bench cluster up`, docs/scale-out.md). Installs only what is missing;
# uses sudo when not root. Offline-safe: apt reaches the Debian mirror only.
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 || need+=(postgresql)
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
sudo_=""
[ "$(id -u)" -ne 0 ] && sudo_="sudo"
echo "system_deps: installing ${need[*]}"
$sudo_ apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq "${need[@]}"
# Debian starts the packaged services; the product runs its own instances on free ports, so stop them again.
for svc in redis-server postgresql; do
  $sudo_ service "$svc" stop >/dev/null 2>&1 || true
done
