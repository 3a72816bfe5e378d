/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_PMU_BPF_H
#define MOAT_PMU_BPF_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "pmu.h"	/* bpf/pmu.h: struct moat_pmu_sum */

/*
 * Counters per cgroup (bpf/pmu.bpf.c): up to MOAT_PMU_EVENTS events, named
 * as libpfm4 knows them ("cycles", "instructions", "LLC-load-misses", a
 * CPU's own event names, or "cpu-clock", the software event that stands
 * in on machines without a PMU), one counting perf event per CPU each.
 */
struct moat_pmu;

struct moat_pmu_opts {
	const char *events[MOAT_PMU_EVENTS];	/* NULL-terminated if shorter */
	bool force_raw_tp;
};

/**
 * moat_pmu_open() - encode the events with libpfm4, open them on every
 * CPU, load and attach the program.  An event that cannot be encoded or
 * opened is left out, with the reason logged once; the events that
 * opened keep their order.
 *
 * Return: 0; -ENOENT when no event could be opened; -errno otherwise.
 */
int moat_pmu_open(const struct moat_pmu_opts *opts, struct moat_pmu **out);
void moat_pmu_close(struct moat_pmu *p);

/** The name of the event that opened in slot @i; NULL past the last. */
const char *moat_pmu_event(const struct moat_pmu *p, size_t i);

/**
 * moat_pmu_read_map() - @cgid's value in the per-CPU sums map @fd, its
 * @ncpus copies (into @buf) summed into @out; read again while a copy
 * was taken during a charge (bpf/pmu.h), a few times.  Return: 0,
 * -EAGAIN when every try had such a copy, -errno of the lookup.
 */
int moat_pmu_read_map(int fd, int ncpus, __u64 cgid, struct moat_pmu_sum *buf,
		      struct moat_pmu_sum *out);

typedef int (*moat_pmu_fn)(__u64 cgid, const struct moat_pmu_sum *s,
			   void *ctx);

/**
 * moat_pmu_for_each() - call @fn with every cgroup's sums since load,
 * summed over CPUs, read in batches; a cgroup whose copy was taken during
 * a charge is read again on its own, and left out of this walk if that
 * keeps happening.  A non-zero return from @fn stops the walk and is
 * returned.
 */
int moat_pmu_for_each(struct moat_pmu *p, moat_pmu_fn fn, void *ctx);

/** moat_pmu_drops() - charges lost to a full map. */
__u64 moat_pmu_drops(const struct moat_pmu *p);

#endif /* MOAT_PMU_BPF_H */
