/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_CGROUP_EVENTS_BPF_H
#define MOAT_CGROUP_EVENTS_BPF_H

#include <stdbool.h>
#include <linux/types.h>

/* bpf/cgroup_events.bpf.c, loaded and attached, and its ring buffer. */
struct moat_cgroup_events;

/**
 * moat_cgroup_events_open() - load and attach the cgroup_mkdir/rmdir
 * programs (tp_btf where supported, else raw_tp).  Logs one line.
 *
 * Return: 0, or the error; callers fall back to walking the hierarchy.
 */
int moat_cgroup_events_open(struct moat_cgroup_events **out);
void moat_cgroup_events_close(struct moat_cgroup_events *ev);

typedef void (*moat_cgroup_removed_fn)(__u64 id, void *ctx);

/**
 * moat_cgroup_events_consume() - take every waiting event, calling
 * @removed (when not NULL) with the id of each cgroup removed.
 *
 * Return: whether any cgroup of the cpu hierarchy was made or removed
 * since the last call, or events were dropped, so that only a walk of the
 * hierarchy can tell what changed.
 */
bool moat_cgroup_events_consume(struct moat_cgroup_events *ev,
				moat_cgroup_removed_fn removed, void *ctx);

#endif /* MOAT_CGROUP_EVENTS_BPF_H */
