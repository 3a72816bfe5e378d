/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_BPF_PROBE_H
#define MOAT_BPF_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

/**
 * moat_probe_tp_btf() - whether tp_btf programs can attach to tracepoint
 * @tp: kernel BTF has its btf_trace_<tp> type and the kernel loads a
 * two-instruction tracing program against it.
 */
bool moat_probe_tp_btf(const char *tp);

/* One key of a per-CPU hash map and its @ncpus values, each @vsize. */
typedef int (*moat_percpu_fn)(__u64 key, const void *vals, void *ctx);

/**
 * moat_percpu_for_each() - call @fn for every entry of the per-CPU hash
 * map @fd (__u64 keys; @vsize, a multiple of 8, per CPU), in a few
 * syscalls: BPF_MAP_LOOKUP_BATCH (v5.6) returns a batch of keys with
 * every CPU's value each time.  A non-zero return of @fn stops the walk
 * and is returned.  Return: 0, or that, or -errno.
 */
int moat_percpu_for_each(int fd, size_t vsize, int ncpus, moat_percpu_fn fn,
			 void *ctx);

#endif /* MOAT_BPF_PROBE_H */
