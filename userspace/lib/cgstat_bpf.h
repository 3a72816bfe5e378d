/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_CGSTAT_BPF_H
#define MOAT_CGSTAT_BPF_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include "cgstat.h"	/* bpf/: struct moat_cgstat */

/*
 * Every cgroup's counters below a root in one read (bpf/cgstat.bpf.c): the
 * loaded program, and a walk per hierarchy root, each holding the records
 * of its last read, sorted by cgroup id.
 */
struct moat_cgstat_prog;
struct moat_cgstat_walk;

/**
 * moat_cgstat_load() - load bpf/cgstat.bpf.c for a cgroup v2 hierarchy
 * (@v2) or v1 ones, with room for @room cgroups a walk (0: as many as
 * MOAT_CGSTAT_MAX).
 *
 * Return: 0; -EOPNOTSUPP where the kernel has no cgroup iterator (before
 * v6.1); the load's -errno where it has one and the load fails (the
 * verifier's refusal, a privilege); each with the reason in @why.
 */
int moat_cgstat_load(bool v2, size_t room, struct moat_cgstat_prog **out,
		     char *why, size_t whylen);
void moat_cgstat_unload(struct moat_cgstat_prog *p);

/**
 * moat_cgstat_has_usage() - whether the records carry CPU usage: on v2,
 * where the kernel has an rstat flush kfunc (every v2 kernel with a
 * cgroup iterator); never on v1.
 */
bool moat_cgstat_has_usage(const struct moat_cgstat_prog *p);

/**
 * moat_cgstat_has_psi() - whether the records carry pressure's sums
 * (MOAT_CGSTAT_PSI, cgstat.bpf.c: "Pressure"): on v2, where the kernel
 * lets the program find its per-CPU data (CONFIG_KALLSYMS_ALL).
 */
bool moat_cgstat_has_psi(const struct moat_cgstat_prog *p);

/**
 * moat_cgstat_walk_new() - a walk of the cgroup at directory @dir and every
 * cgroup below it.  Return: 0 or -errno.
 */
int moat_cgstat_walk_new(struct moat_cgstat_prog *p, const char *dir,
			 struct moat_cgstat_walk **out);
void moat_cgstat_walk_free(struct moat_cgstat_walk *w);

/**
 * moat_cgstat_walk_read() - read every cgroup's record afresh.
 * Return: the number of records, or -errno (the last read's are dropped):
 * -E2BIG where the walk found more cgroups than moat_cgstat_room().
 */
int moat_cgstat_walk_read(struct moat_cgstat_walk *w);

/** moat_cgstat_room() - the most cgroups a walk of @p can read. */
size_t moat_cgstat_room(const struct moat_cgstat_prog *p);

/**
 * moat_cgstat_walk_found() - the cgroups the last read of @w walked,
 * those that found no room too.
 */
size_t moat_cgstat_walk_found(const struct moat_cgstat_walk *w);

/**
 * moat_cgstat_walk_fingerprint() - the fingerprint of the set of cgroups
 * the last read found (moat_cgroup_set_fingerprint()): equal to that of a walk of
 * the same root's directories that found the same cgroups.
 */
__u64 moat_cgstat_walk_fingerprint(const struct moat_cgstat_walk *w);

/** moat_cgstat_walk_find() - the last read's record of cgroup @id, or NULL. */
const struct moat_cgstat *moat_cgstat_walk_find(const struct moat_cgstat_walk *w,
						__u64 id);

#endif /* MOAT_CGSTAT_BPF_H */
