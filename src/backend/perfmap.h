/*
** backend/perfmap.h: the perf map of JIT code (perfmap.c), switched on by
** the environment variable KJIT_PERF_MAP.
*/
#ifndef KJIT_PERFMAP_H
#define KJIT_PERFMAP_H
#include <stddef.h>

/* Whether KJIT_PERF_MAP is set (to anything but 0); read once. */
int kperf_enabled(void);

/* Appends the functions of the ELF object obj (linked: its function entry
** is at entry_addr) to /tmp/perf-<pid>.map. A no-op when not enabled. */
void kperf_object(const void *obj, size_t len, const char *entry, const void *entry_addr);

#endif
