/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_CGROUP_EVENTS_BPF_H
#define MOAT_CGROUP_EVENTS_BPF_H

#include <stdbool.h>
#include <linux/types.h>

/* bpf/cgroup_events.bpf.c, loaded and attached, and its ring buffer. */
struct moat_cgroup_events;

/**
 * moat_cgroup_events_open() - load and attach the cgroup_mkdir, rmdir and
 * rename programs (tp_btf where supported, else raw_tp), for the cgroups
 * below @scan_root (its id; 0: the whole cpu hierarchy): the removal of a
 * cgroup elsewhere is told to consume()'s @removed only.  Logs one line.
 *
 * Return: 0, or the error; callers fall back to walking the hierarchy.
 */
int moat_cgroup_events_open(__u64 scan_root, struct moat_cgroup_events **out);
void moat_cgroup_events_close(struct moat_cgroup_events *ev);

typedef void (*moat_cgroup_removed_fn)(__u64 id, void *ctx);
/* Task @tid entered the subtree of tracked cgroup @unit. */
typedef void (*moat_cgroup_task_fn)(__u64 unit, __u32 tid, void *ctx);

/**
 * moat_cgroup_events_consume() - take every waiting event, calling
 * @removed (when not NULL) with the id of each cgroup removed.
 *
 * Return: whether any cgroup below the scan root was made, removed or
 * renamed since the last call, or events were dropped, so that only a
 * walk of the hierarchy can tell what changed.
 */
bool moat_cgroup_events_consume(struct moat_cgroup_events *ev,
				moat_cgroup_removed_fn removed,
				moat_cgroup_task_fn task, void *ctx);

/**
 * moat_cgroup_events_fd() - an fd that polls readable when events wait:
 * then consume them.
 */
int moat_cgroup_events_fd(const struct moat_cgroup_events *ev);

/**
 * moat_cgroup_events_track() - hear of the tasks that enter the subtree
 * of each of the @n cgroups @ids (and of no other): it replaces the set.
 * Return: 0, or -errno (-E2BIG: more than the map holds; none tracked).
 */
int moat_cgroup_events_track(struct moat_cgroup_events *ev, const __u64 *ids,
			     size_t n);

#endif /* MOAT_CGROUP_EVENTS_BPF_H */
