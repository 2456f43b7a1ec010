# shellcheck shell=bash
# Sourced by the set-up scripts: environments kept outside the clone, one folder per recipe.
#
# An entry is `$CACHE_ROOT/<kind>-<hash>`, the hash taken over its lock files and the script that
# builds it, so a changed pin or recipe is a new entry and an unchanged one is reused by every clone
# on the machine. It is built in place under a lock (another clone building the same entry waits),
# marked complete only at the end (a half-built entry is built again), and linked from the clone
# (`.venv`, `.venv-vllm`, `node_modules`). Entries of a kind beyond the newest KEEP are removed once
# no set-up has used them for a day (another clone's test run may still be on one), never one that
# is being built.
#
# CACHE_ROOT: INFERENCE_CACHE_DIR, else $XDG_CACHE_HOME/inference-survey, else ~/.cache/inference-survey.

CACHE_ROOT="${INFERENCE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/inference-survey}"

# cache_hash FILE...: 16 hex digits over the files' contents and the Python that will run them.
cache_hash() {
  { cat "$@"; "${PYTHON:-python3}" -c 'import sys; print(sys.version)'; } | sha256sum | cut -c1-16
}

# cached_entry KIND HASH BUILD_FUNCTION: sets ENTRY to the entry's folder, built once by
# BUILD_FUNCTION (called with the folder as its argument). The lock is held until this script ends.
cached_entry() {
  local kind=$1 hash=$2 build=$3 lock
  ENTRY="$CACHE_ROOT/$kind-$hash"
  mkdir -p "$CACHE_ROOT"
  exec {lock}>"$ENTRY.lock"
  flock "$lock"
  if [ ! -f "$ENTRY/.complete" ]; then
    rm -rf "$ENTRY"
    mkdir -p "$ENTRY"
    "$build" "$ENTRY"
    touch "$ENTRY/.complete"
  fi
  touch "$ENTRY/.complete"  # most recently used
}

# link_entry LINK ENTRY: make LINK (in the clone) point at ENTRY; a real folder there from before
# the cache is removed (it was made by these scripts alone).
link_entry() {
  local link=$1 entry=$2
  if [ -L "$link" ] && [ "$(readlink "$link")" = "$entry" ]; then
    return
  fi
  if [ -e "$link" ] && [ ! -L "$link" ]; then
    echo "setup: $link was a folder of its own; it is now a link to $entry" >&2
    rm -rf "$link"
  fi
  ln -sfn "$entry" "$link"
}

# evict KIND KEEP CURRENT: remove the entries of KIND beyond the KEEP most recently used that no
# set-up used for a day (never CURRENT, never one being built).
evict() {
  local kind=$1 keep=$2 current=$3 entry lock index=0
  local -a entries
  mapfile -t entries < <(
    for entry in "$CACHE_ROOT/$kind"-*/; do
      [ -d "$entry" ] || continue
      entry=${entry%/}
      printf '%s %s\n' "$(stat -c %Y "$entry/.complete" 2>/dev/null || echo 0)" "$entry"
    done | sort -rn | cut -d' ' -f2-
  )
  for entry in "${entries[@]}"; do
    index=$((index + 1))
    if [ "$entry" = "$current" ] || [ "$index" -le "$keep" ]; then
      continue
    fi
    if [ -f "$entry/.complete" ] && [ -n "$(find "$entry/.complete" -mmin -1440)" ]; then
      continue
    fi
    exec {lock}>"$entry.lock"
    if flock -n "$lock"; then
      echo "setup: removing the cache entry $entry (unused for a day)"
      rm -rf "$entry" "$entry.lock"
    fi
    exec {lock}>&-
  done
}
