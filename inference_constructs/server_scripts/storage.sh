#!/bin/bash
# Run once at boot, before the server starts: where Docker keeps the image's layers and the server
# its weights and caches. The instance store (NVMe on the instance itself: g6.xlarge has 250 GB,
# trn1.2xlarge 474 GB; catalog/boot.py) when the type has one and it holds the image and the
# weights (NEEDS_DISK_GB), else the root volume, whose gp3 throughput the stack sets. Whatever
# fails here leaves everything on the root volume, the slow way, and says why: it never stops the
# boot. The instance store's data is lost when the instance stops, which a server launched anew
# by its group never needs.
set -uo pipefail
# shellcheck source=/dev/null
source "${INFERENCE_ROOT:-}/usr/local/lib/inference-common.sh"

root_volume() {
  note storage "root volume: $1"
  exit 0
}

# An NVMe instance store volume names itself so (the EC2 user guide's NVMe instance store page).
device=$(lsblk -dnpo NAME,MODEL 2>/dev/null | awk '/Instance Storage/ {print $1; exit}')
[[ -n "$device" ]] || root_volume "this instance type has no instance store"
# The DLAMI may have mounted it already; else it is formatted and mounted here.
target=$(lsblk -no MOUNTPOINT "$device" 2>/dev/null | grep -m1 . || true)
if [[ -z "$target" ]]; then
  target="$ROOT/opt/inference/instance-store"
  mkdir -p "$target"
  if ! mkfs.ext4 -q -F -E nodiscard "$device" >&2 || ! mount "$device" "$target"; then
    root_volume "the instance store $device could not be formatted and mounted"
  fi
fi
free_gb=$(df --output=avail -BG "$target" 2>/dev/null | tail -n 1 | tr -dc 0-9)
if (( ${free_gb:-0} < NEEDS_DISK_GB )); then
  root_volume "the instance store $device has ${free_gb:-no} GB free; the image and the weights need $NEEDS_DISK_GB GB"
fi
# Both stores an engine may keep images in (Docker's own, containerd's image store) move, empty,
# onto the instance store: nothing has been pulled yet.
systemctl stop docker.service containerd.service
for store in docker containerd; do
  mkdir -p "$target/$store" "$ROOT/var/lib/$store"
  if ! mount --bind "$target/$store" "$ROOT/var/lib/$store"; then
    systemctl start containerd.service docker.service
    root_volume "Docker's data could not be moved to the instance store $device"
  fi
done
systemctl start containerd.service docker.service
mkdir -p "$target/inference"
printf '%s/inference' "$target" > "$STATE_DIR/data-root"
note storage "instance store $device at $target ($free_gb GB free): the image, the weights and the caches"
