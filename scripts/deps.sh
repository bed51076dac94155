#!/usr/bin/env bash
# Installs the Debian packages the build and tests need (and any extra ones named on the
# command line), with sudo unless run as root. Does nothing when they are all installed.
# Usage: scripts/deps.sh [EXTRA_PACKAGE...]
set -euo pipefail
packages=(cmake gcc make libc6-dev pkg-config libcjson-dev libpcre2-dev libutf8proc-dev
  libmicrohttpd-dev libpng-dev libjpeg62-turbo-dev bsdutils python3 python3-venv "$@")
# libpng-dev, libjpeg62-turbo-dev: image decoding (src/image/, docs/adr/0009-image-decoders.md).
# bsdutils: `script`, the pseudo-terminal of the chat tests. python3 and python3-venv: the test
# environment (scripts/venv.sh installs tests/requirements.txt from PyPI into .venv).
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if ! command -v apt-get >/dev/null; then
  echo "scripts/deps.sh: not a Debian system; please install: ${missing[*]}" >&2
  exit 1
fi
sudo=()
[ "$(id -u)" -eq 0 ] || sudo=(sudo)
echo "Installing: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# A fresh machine may have empty package lists; refresh them only when an install needs it.
if ! "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"; then
  "${sudo[@]}" apt-get update
  "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}"
fi
