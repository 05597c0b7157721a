#!/bin/sh
# Runs Bun with the server's runtime settings, which must be in place before Bun starts. Every Bun
# process of the project that serves or measures runs through it: `npm start` (the server),
# `npm run dev`, `npm test` (the suite, and the servers it starts), the benchmarks (their scripts,
# servers and bare baselines), so that what is tested and measured runs as production does.
#
#   sh server/runtime.sh <bun arguments ...>      e.g. sh server/runtime.sh server/main.ts
#
# --max-http-header-size=262144: Bun answers headers past its limit itself, with an empty 431;
#   raised past MAX_HEADER_BYTES so that the API's own 413 answers first (docs/api-notes.md
#   "Request limits").
# MIMALLOC_PURGE_DELAY=-1 (unless set): Bun's allocator (mimalloc) keeps the memory it has freed
#   for its next allocations instead of handing it back to the kernel after every collection and
#   faulting it in again: a heartbeat costs a fifth less server CPU, an SMS a quarter less (half
#   the kernel time of each), the test suite a fifth less CPU, and the process holds its busiest
#   moment's memory (about 75 MiB more under a heartbeat load; docs/benchmarks.md "The allocator's
#   purge"). MIMALLOC_PURGE_DELAY=10 restores mimalloc's default.
: "${MIMALLOC_PURGE_DELAY:=-1}"
export MIMALLOC_PURGE_DELAY
exec "${BUN:-bun}" --max-http-header-size=262144 "$@"
