#!/usr/bin/env bash
# Installs the Debian packages attnscope needs to build, test and run, if any are missing.
set -euo pipefail
# Extra package names given as arguments are installed too (make fuzz adds clang and its runtimes).
packages=(cmake make g++ qt6-base-dev qt6-svg-dev libqcustomplot-dev libeigen3-dev libspdlog-dev
          catch2 nlohmann-json3-dev libonig-dev libsentencepiece-dev libsndfile1-dev libsoxr-dev pkg-config fonts-dejavu-core xvfb xauth
          python3-dev pybind11-dev python3-pybind11 python3-numpy python3-pytest chromium "$@")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "Installing missing Debian packages: ${missing[*]}"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
