#!/bin/bash
# inference-deadline.service, READY_MINUTES after boot: a server that is not ready by then is
# stopped and taken to zero instances, so it does not bill without serving.
set -uo pipefail
# shellcheck source=/dev/null
source "${INFERENCE_ROOT:-}/usr/local/lib/inference-common.sh"
state=$(cat "$STATE_FILE" 2>/dev/null || echo unknown)
[[ -e "$SERVED_FILE" ]] && exit 0  # it served in this boot: a later restart is not a launch
case "$state" in
  ready | failed | waiting-for-image) exit 0 ;;  # serving, or already stopped with its reason
esac
systemctl stop inference-server.service || true
stop_and_report "not ready within $READY_MINUTES min of launch (last state: $state)"
