#!/usr/bin/env bash
# Installs what the real-kernel tests need on a fresh Debian 12 machine (run as root).
# Idempotent and fast: apt-get runs only when a package is missing.
set -euo pipefail

PACKAGES=(iptables ipset conntrack nftables iproute2 ipvsadm socat curl kmod procps openssl)

if [[ "$(id -u)" != "0" ]]; then
  echo "install_test_deps: must run as root (uid is $(id -u)): the real-kernel tests need it too" >&2
  exit 1
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
  status="$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null || true)"
  if [[ "$status" != ii* ]]; then
    missing+=("$pkg")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install_test_deps: all present (${PACKAGES[*]})"
  exit 0
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "install_test_deps: missing ${missing[*]} and apt-get is not available: install them by hand" >&2
  exit 1
fi

echo "install_test_deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
if ! apt-get update -qq; then
  echo "install_test_deps: apt-get update failed" >&2
  exit 1
fi
if ! apt-get install -y -qq --no-install-recommends "${missing[@]}"; then
  echo "install_test_deps: apt-get install ${missing[*]} failed" >&2
  exit 1
fi
echo "install_test_deps: installed ${missing[*]}"
