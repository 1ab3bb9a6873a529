#!/usr/bin/env bash
# Installs the Debian 12 packages gpuplan needs, only those missing (a no-op when
# all are present). Fails loudly, naming what it could not install.
set -euo pipefail

packages=(
  g++ cmake make pkg-config
  libeigen3-dev libboost-dev nlohmann-json3-dev libcli11-dev libfmt-dev doctest-dev libbenchmark-dev
  pybind11-dev python3-pybind11 python3-dev python3-setuptools python3-pip python3-venv
  python3-numpy python3-pytest python3-yaml python3-pandas python3-matplotlib python3-nbclient python3-ipykernel python3-nbformat
  python3-torch python3-torchvision
  clang libclang-rt-14-dev
)
# --web (make web, make test-web): the WebAssembly compiler and the browser the page is
# tested in; npm only when no npm is installed (a Node.js from elsewhere brings its own).
if [[ "${1:-}" == "--web" ]]; then
  packages+=(emscripten chromium)
  command -v npm >/dev/null 2>&1 || packages+=(npm)
fi

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "installed" ]] || missing+=("$p")
done

if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get install -y --no-install-recommends "${missing[@]}" >/tmp/gpuplan-apt.log 2>&1; then
  $SUDO apt-get update >>/tmp/gpuplan-apt.log 2>&1 || true
  if ! $SUDO apt-get install -y --no-install-recommends "${missing[@]}" >>/tmp/gpuplan-apt.log 2>&1; then
    tail -20 /tmp/gpuplan-apt.log >&2
    echo "install-deps: FAILED to install: ${missing[*]} (see /tmp/gpuplan-apt.log)" >&2
    exit 1
  fi
fi
still=()
for p in "${missing[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "installed" ]] || still+=("$p")
done
if ((${#still[@]} > 0)); then
  echo "install-deps: still missing after apt-get: ${still[*]}" >&2
  exit 1
fi
