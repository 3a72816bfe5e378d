/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * libmoat's state as the selftests check it: reads that no part of moat
 * needs (moatd walks the maps whole, moat_rqlat_for_each_hist() and
 * moat_pmu_for_each(); rdt.c reads a group's tasks with
 * moat_read_tids()), kept out of the modules' headers so that none
 * comes to depend on them.  Only libmoat and selftests/ include this
 * (selftests/check_includes.sh).
 */
#ifndef MOAT_PEEK_H
#define MOAT_PEEK_H

#include <sys/types.h>
#include "pmu_bpf.h"
#include "resctrl.h"
#include "rqlat_bpf.h"

/**
 * moat_rqlat_read_hist() - @cgid's histogram since load, summed over CPUs.
 *
 * Return: 0, -ENOENT when the cgroup has waited for nothing yet.
 */
int moat_rqlat_read_hist(struct moat_rqlat *r, __u64 cgid,
			 struct moat_rqlat_hist *out);

/** moat_rqlat_hash_has() - 1 if the pid hash has an entry for @tid, else 0. */
int moat_rqlat_hash_has(const struct moat_rqlat *r, __u32 tid);

/** The number of events that opened, in their slots. */
size_t moat_pmu_nr_events(const struct moat_pmu *p);

/**
 * moat_pmu_read() - what was charged to cgroup @cgid since load, summed
 * over CPUs.  Return: 0, -ENOENT when nothing was, -EAGAIN when a CPU
 * was charging it at every try (see moat_pmu_read_map()).
 */
int moat_pmu_read(struct moat_pmu *p, __u64 cgid, struct moat_pmu_sum *out);

/**
 * moat_rdt_read_tids() - @dir/tasks, sorted, into *@out (to free).
 * Return: how many, or -errno.
 */
ssize_t moat_rdt_read_tids(const char *dir, __u32 **out);

#endif /* MOAT_PEEK_H */
