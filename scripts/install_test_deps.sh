#!/usr/bin/env bash
# Installs what the real-kernel tests need on a fresh Debian 12 machine (run as root).
# Idempotent and fast: apt-get runs only when a package is missing.
set -euo pipefail

# qemu-system-x86, xz-utils and apt's download of the kernel and busybox-static packages serve the
# IPVS guest (scripts/ipvs_vm): this kernel may lack IPVS, so IPVS tests run in a qemu guest.
# mmdebstrap builds the node image's and the systemd guest's root filesystems from Debian's
# packages (scripts/image, scripts/systemd_vm); skopeo, podman and containerd (ctr) read the OCI
# archive back in its tests, as operators load it.
PACKAGES=(iptables ipset conntrack nftables iproute2 ipvsadm socat curl kmod procps openssl
  qemu-system-x86 xz-utils coreutils nfacct prometheus mmdebstrap skopeo podman containerd)

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

# Builds (or reuses from its cache) the IPVS guest's kernel and initramfs; needs apt only once.
prepare_ipvs_guest() {
  local here
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  if ! command -v deno >/dev/null 2>&1; then
    echo "install_test_deps: no deno on PATH; tests/e2e/ipvs_guest_test.ts will build the IPVS guest"
    return 0
  fi
  if ! deno run -A "$here/ipvs_vm/prepare_main.ts"; then
    echo "install_test_deps: preparing the IPVS guest (scripts/ipvs_vm) failed" >&2
    exit 1
  fi
}

if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install_test_deps: all present (${PACKAGES[*]})"
  prepare_ipvs_guest
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
prepare_ipvs_guest
