/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/* Types shared by bpf/cgroup_events.bpf.c and userspace. */
#ifndef MOAT_BPF_CGROUP_EVENTS_H
#define MOAT_BPF_CGROUP_EVENTS_H

enum moat_cgroup_event_type {
	MOAT_CGROUP_MKDIR,
	MOAT_CGROUP_RMDIR,
};

struct moat_cgroup_event {
	__u64 id;		/* the cgroup's kernfs id */
	__u32 type;		/* enum moat_cgroup_event_type */
	__u32 pad;
};

#define MOAT_CGROUP_EVENTS_RINGBUF	(64 * 1024)

#endif /* MOAT_BPF_CGROUP_EVENTS_H */
