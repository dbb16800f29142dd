/**
 * glibc malloc settings docs/operations.md ("Memory") recommends and `npm start` sets: two arenas
 * instead of eight per core, and buffers over 128 KiB mmapped on their own (a fixed threshold, so
 * freeing one returns it to the system instead of raising the threshold to 32 MiB). A module of its
 * own: the benches run the server as `npm start` does without loading the server's code themselves.
 */
export const MALLOC_ENV = { MALLOC_ARENA_MAX: "2", MALLOC_MMAP_THRESHOLD_: "131072", MALLOC_TRIM_THRESHOLD_: "131072" };
