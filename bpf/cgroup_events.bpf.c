// SPDX-License-Identifier: GPL-2.0-only
/*
 * cgroup_events: tell userspace at once when a cgroup is made or removed
 * in the hierarchy of the cpu controller, so that moatd need not walk the
 * whole hierarchy every period to find new and removed groups.
 *
 * Hooks the cgroup_mkdir and cgroup_rmdir tracepoints (tp_btf, raw_tp
 * where tp_btf is missing) and puts the cgroup's id and the event in a
 * ring buffer.  Events of other hierarchies (v1 hierarchies without the
 * cpu controller) are not sent.  An event that does not fit in the ring
 * buffer is counted in events_dropped; userspace then walks the
 * hierarchy, since it cannot know what it missed.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "cgroup_events.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, MOAT_CGROUP_EVENTS_RINGBUF);
} events SEC(".maps");

__u64 events_dropped;

static __always_inline int send(struct cgroup *cgrp, __u32 type, bool btf)
{
	struct moat_cgroup_event *e;
	unsigned int mask;
	int cpu_id;

	if (!bpf_core_enum_value_exists(enum cgroup_subsys_id, cpu_cgrp_id))
		return 0;
	cpu_id = bpf_core_enum_value(enum cgroup_subsys_id, cpu_cgrp_id);
	mask = btf ? cgrp->root->subsys_mask :
		     BPF_CORE_READ(cgrp, root, subsys_mask);
	if (!(mask & (1U << cpu_id)))
		return 0;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&events_dropped, 1);
		return 0;
	}
	e->id = btf ? cgrp->kn->id : BPF_CORE_READ(cgrp, kn, id);
	e->type = type;
	e->pad = 0;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

SEC("tp_btf/cgroup_mkdir")
int BPF_PROG(cgroup_mkdir_btf, struct cgroup *cgrp, const char *path)
{
	return send(cgrp, MOAT_CGROUP_MKDIR, true);
}

SEC("tp_btf/cgroup_rmdir")
int BPF_PROG(cgroup_rmdir_btf, struct cgroup *cgrp, const char *path)
{
	return send(cgrp, MOAT_CGROUP_RMDIR, true);
}

SEC("raw_tp/cgroup_mkdir")
int BPF_PROG(cgroup_mkdir_raw, struct cgroup *cgrp, const char *path)
{
	return send(cgrp, MOAT_CGROUP_MKDIR, false);
}

SEC("raw_tp/cgroup_rmdir")
int BPF_PROG(cgroup_rmdir_raw, struct cgroup *cgrp, const char *path)
{
	return send(cgrp, MOAT_CGROUP_RMDIR, false);
}

char LICENSE[] SEC("license") = "GPL";
