#!/bin/sh
# Starts the server as `npm start` runs it (`npm run dev` adds --watch; the benchmarks start their
# servers, and their bare baselines, through it too): Bun's own options, and the allocator's
# settings, which must be in the environment before Bun starts.
#
#   sh server/start.sh [bun options ...] [script.ts [its arguments ...]]   (server/main.ts unless a script is given)
#
# --max-http-header-size=262144: Bun answers headers past its limit itself, with an empty 431;
#   raised past MAX_HEADER_BYTES so that the API's own 413 answers first (docs/api-notes.md
#   "Request limits").
# MIMALLOC_PURGE_DELAY=-1 (unless set): Bun's allocator (mimalloc) keeps the memory it has freed
#   for its next allocations instead of handing it back to the kernel after every collection and
#   faulting it in again: a heartbeat costs a fifth less server CPU, an SMS a quarter less (half
#   the kernel time of each), and the process holds its busiest moment's memory (about 75 MiB more
#   under a heartbeat load; docs/benchmarks.md "The allocator's purge"). MIMALLOC_PURGE_DELAY=10
#   restores mimalloc's default.
: "${MIMALLOC_PURGE_DELAY:=-1}"
export MIMALLOC_PURGE_DELAY
script=
for arg; do
  case "$arg" in *.ts) script=$arg ;; esac
done
[ -n "$script" ] || set -- "$@" "$(dirname "$0")/main.ts"
exec "${BUN:-bun}" --max-http-header-size=262144 "$@"
