#!/bin/bash
# inference-boot, run once by the user data after it fetched, checked and unpacked these scripts:
# the launch deadline first, then readiness `booting`, swap, Docker, where Docker keeps its data,
# and the server's unit. From here on a failed step reports where, and takes the server to zero.
set -euo pipefail
# shellcheck source=/dev/null
source "${INFERENCE_ROOT:-}/usr/local/lib/inference-common.sh"
# Seconds Docker's install may take where the AMI has none.
DOCKER_INSTALL_S=900
trap 'stop_and_report "boot script failed at line $LINENO; see /var/log/inference-boot.log"' ERR
systemctl daemon-reload
# The deadline counts from boot (OnBootSec), whenever it is armed: a server not ready by then stops.
systemctl enable --now inference-deadline.timer
report booting
if (( SWAP_GIB > 0 )) && ! swapon --show=NAME --noheadings | grep -qx "$ROOT/swapfile"; then
  # One command per line, so that a failing one stops the boot instead of passing.
  fallocate -l "${SWAP_GIB}G" "$ROOT/swapfile"
  chmod 600 "$ROOT/swapfile"
  mkswap "$ROOT/swapfile"
  swapon "$ROOT/swapfile"
  grep -q '^/swapfile ' "$ROOT/etc/fstab" 2>/dev/null || echo '/swapfile none swap sw 0 0' >> "$ROOT/etc/fstab"
fi
# Where the AMI has no Docker: Ubuntu's, waiting for the package lock that unattended-upgrades may
# hold at first boot (apt-get fails at once on a held lock otherwise).
command -v docker >/dev/null || timeout "$DOCKER_INSTALL_S" bash -c \
  'apt-get -o DPkg::Lock::Timeout=300 update -y && apt-get -o DPkg::Lock::Timeout=300 install -y docker.io'
# Docker's data and the server's weights and caches: the instance store where there is one.
"$ROOT/usr/local/bin/inference-storage"
systemctl enable --now inference-server.service
