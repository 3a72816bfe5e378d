/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Types shared by bpf/cgroup_events.bpf.c and userspace. */
#ifndef MOAT_BPF_CGROUP_EVENTS_H
#define MOAT_BPF_CGROUP_EVENTS_H

enum moat_cgroup_event_type {
	MOAT_CGROUP_MKDIR,
	MOAT_CGROUP_RMDIR,
	MOAT_CGROUP_TASK,	/* a task entered a tracked cgroup's subtree */
	MOAT_CGROUP_RENAME,	/* v1 only: cgroup2 has no rename */
	MOAT_CGROUP_RMDIR_ELSEWHERE,	/* removed, not below the scan root */
};

struct moat_cgroup_event {
	__u64 id;		/* the cgroup's kernfs id; TASK: the tracked
				   cgroup the task is now under */
	__u32 type;		/* enum moat_cgroup_event_type */
	__u32 tid;		/* TASK: the task; else 0 */
};

/*
 * How far above a cgroup a tracked cgroup, or the scan root, is looked
 * for.  A cgroup made or renamed deeper than that is sent as if below the
 * scan root (userspace's walk then tells); a task that enters a cgroup
 * deeper than that below a tracked one is not sent, and the next
 * reconcile moves it.
 */
#define MOAT_CGROUP_TRACK_DEPTH		8
#define MOAT_CGROUP_TRACKED_MAX		4096

#define MOAT_CGROUP_EVENTS_RINGBUF	(64 * 1024)

#endif /* MOAT_BPF_CGROUP_EVENTS_H */
