#!/bin/sh
# The image's entrypoint: sizes V8's heap from the container's memory limit, then runs the command
# (the broker, `node dist/main.js`) in its place, so that it stays PID 1 and gets SIGTERM itself.
#
# With a limit, the old space may take HEAP_SHARE % of it (--max-old-space-size). The rest is for
# what lives outside it: the young generation (V8 sizes it from the same limit: 48 MiB at 768Mi),
# code, socket and TLS buffers, undici's pools, OpenSSL and the logger's buffer. Node's default
# reads the limit too, but gives the old space half of it with a 256 MiB floor: above the whole
# limit of a 256Mi container (the OOM killer strikes before V8 collects in earnest), and a third
# of a 1Gi one left unused. Without a limit, nothing is set: Node's default (docs/operations.md,
# "Memory").
#
# Node 24's --max-old-space-size-percentage reads the limit too, but takes its share of the host's
# memory when there is none (75 % of 24 GB: an 18 GB heap), so it is not used here.
#
# An integrator's NODE_OPTIONS that sizes the heap itself wins: nothing is added to it.
set -eu

HEAP_SHARE=75

# The container's memory limit in bytes, or nothing: cgroup v2 (the container's own cgroup
# namespace, as Docker and containerd give it) or v1.
memory_limit() {
  for file in /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory/memory.limit_in_bytes; do
    if [ -r "$file" ]; then
      read -r limit <"$file"
      # v2 says `max`; v1 says a number near 2^63 when unlimited, so a limit at or above the
      # host's memory is none.
      case $limit in '' | *[!0-9]*) return 0 ;; esac
      while read -r name total_kib _; do
        if [ "$name" = MemTotal: ]; then
          [ "$limit" -lt $((total_kib * 1024)) ] && echo "$limit"
          return 0
        fi
      done </proc/meminfo
      return 0
    fi
  done
}

case ${NODE_OPTIONS:-} in
  *--max[-_]old[-_]space[-_]size* | *--max[-_]heap[-_]size*) ;;
  *)
    limit=$(memory_limit)
    if [ -n "$limit" ]; then
      old_space_mib=$((limit / 1048576 * HEAP_SHARE / 100))
      export NODE_OPTIONS="--max-old-space-size=$old_space_mib${NODE_OPTIONS:+ $NODE_OPTIONS}"
    fi
    ;;
esac

exec "$@"
