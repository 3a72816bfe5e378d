// SPDX-License-Identifier: GPL-2.0-only
/*
 * cgroup_events: tell userspace at once when a cgroup is made, removed
 * or renamed in the hierarchy of the cpu controller, so that moatd need
 * not walk the whole hierarchy every period to find new and removed
 * groups.
 *
 * Hooks the cgroup_mkdir, cgroup_rmdir and cgroup_rename tracepoints
 * (tp_btf, raw_tp where tp_btf is missing) and puts the cgroup's id and
 * the event in a ring buffer.  Events of other hierarchies (v1
 * hierarchies without the cpu controller) are not sent, nor those of
 * cgroups outside the subtree userspace watches (scan_root), which would
 * make it walk for nothing on a node whose other cgroups churn (systemd's
 * units, containerd's): but a cgroup removed there is still said
 * (MOAT_CGROUP_RMDIR_ELSEWHERE), for its run-queue histograms, which
 * every cgroup has, to leave their map.  An event that does not fit in
 * the ring buffer is counted in events_dropped; userspace then walks the
 * hierarchy, since it cannot know what it missed.
 *
 * Tasks, for resctrl, which groups tasks and not cgroups: a task that
 * enters the subtree of a cgroup userspace put in the tracked map is sent
 * too, so that moatd moves it into its class's resctrl group at once
 * rather than at the next reconcile.  It enters by cgroup_attach_task
 * (a write to cgroup.procs, or tasks), or by being forked straight into
 * it (clone3() with CLONE_INTO_CGROUP, as container runtimes and systemd
 * start processes): then sched_process_fork sees a child whose cgroup is
 * not its parent's.  A child forked in its parent's cgroup needs nothing:
 * the kernel copies the parent's CLOSID and RMID to it.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "cgroup_events.h"
#include "core_fixes.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, MOAT_CGROUP_EVENTS_RINGBUF);
} events SEC(".maps");

/* cgroup id -> 1: the cgroups whose new tasks userspace wants to hear of */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MOAT_CGROUP_TRACKED_MAX);
	__type(key, __u64);
	__type(value, __u8);
} tracked SEC(".maps");

/* Set by userspace before load: the subtree it walks; 0: all of it. */
const volatile __u64 scan_root;

__u64 events_dropped;
bool tracking;		/* userspace: the tracked map is not empty */

/* Whether @cgrp's hierarchy is the cpu controller's. */
static __always_inline bool in_cpu_hierarchy(struct cgroup *cgrp, bool btf)
{
	unsigned int mask;
	int cpu_id;

	if (!bpf_core_enum_value_exists(enum cgroup_subsys_id, cpu_cgrp_id))
		return false;
	cpu_id = bpf_core_enum_value(enum cgroup_subsys_id, cpu_cgrp_id);
	mask = btf ? cgrp->root->subsys_mask :
		     BPF_CORE_READ(cgrp, root, subsys_mask);
	return mask & (1U << cpu_id);
}

static __always_inline int emit(__u64 id, __u32 type, __u32 tid)
{
	struct moat_cgroup_event *e;

	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		__sync_fetch_and_add(&events_dropped, 1);
		return 0;
	}
	e->id = id;
	e->type = type;
	e->tid = tid;
	bpf_ringbuf_submit(e, 0);
	return 0;
}

/* above()'s answer when it gave up, MOAT_CGROUP_TRACK_DEPTH levels up */
#define TOO_DEEP	(~0ULL)

/*
 * The id of @cgrp or of its nearest ancestor that is @want (with @want 0:
 * that is in the tracked map); 0: none, up to the hierarchy's root;
 * TOO_DEEP: none within MOAT_CGROUP_TRACK_DEPTH levels, and more above.
 */
static __always_inline __u64 above(struct cgroup *cgrp, __u64 want, bool btf)
{
	int i;

	for (i = 0; i < MOAT_CGROUP_TRACK_DEPTH; i++) {
		__u64 id;
		struct cgroup_subsys_state *up;

		if (!cgrp)
			return 0;
		id = btf ? cgrp->kn->id : BPF_CORE_READ(cgrp, kn, id);
		if (want ? id == want : !!bpf_map_lookup_elem(&tracked, &id))
			return id;
		up = btf ? cgrp->self.parent : BPF_CORE_READ(cgrp, self.parent);
		if (!up)
			return 0;
		cgrp = btf ? up->cgroup : BPF_CORE_READ(up, cgroup);
	}
	return TOO_DEEP;
}

/*
 * A cgroup too deep to tell is sent as if below the scan root: a walk
 * for nothing costs userspace less than a group it does not see until
 * the next rescan_ms.
 */
static __always_inline int send(struct cgroup *cgrp, __u32 type, bool btf)
{
	if (!in_cpu_hierarchy(cgrp, btf))
		return 0;
	if (scan_root && !above(cgrp, scan_root, btf)) {
		if (type != MOAT_CGROUP_RMDIR)
			return 0;
		type = MOAT_CGROUP_RMDIR_ELSEWHERE;
	}
	return emit(btf ? cgrp->kn->id : BPF_CORE_READ(cgrp, kn, id), type, 0);
}

static __always_inline int task_entered(struct cgroup *cgrp,
					struct task_struct *task, bool btf)
{
	__u64 unit;

	if (!tracking || !cgrp || !in_cpu_hierarchy(cgrp, btf))
		return 0;
	unit = above(cgrp, 0, btf);
	if (!unit || unit == TOO_DEEP)	/* the next reconcile moves it */
		return 0;
	return emit(unit, MOAT_CGROUP_TASK, moat_task_pid(task, btf));
}

/* The cgroup of @t in the cpu controller's hierarchy, or NULL. */
static __always_inline struct cgroup *task_cpu_cgroup(struct task_struct *t,
						      bool btf)
{
	struct cgroup_subsys_state *css;
	struct css_set *cset;
	int cpu_id;

	if (!bpf_core_enum_value_exists(enum cgroup_subsys_id, cpu_cgrp_id))
		return NULL;
	cpu_id = bpf_core_enum_value(enum cgroup_subsys_id, cpu_cgrp_id);
	if (cpu_id < 0 || cpu_id >= CGROUP_SUBSYS_COUNT)
		return NULL;
	if (btf) {
		css = t->cgroups->subsys[cpu_id];
		return css ? css->cgroup : NULL;
	}
	cset = BPF_CORE_READ(t, cgroups);
	if (!cset || bpf_core_read(&css, sizeof(css), &cset->subsys[cpu_id]) || !css)
		return NULL;
	return BPF_CORE_READ(css, cgroup);
}

static __always_inline int forked(struct task_struct *parent,
				  struct task_struct *child, bool btf)
{
	struct cgroup *cgrp;

	if (!tracking)
		return 0;
	cgrp = task_cpu_cgroup(child, btf);
	if (!cgrp || cgrp == task_cpu_cgroup(parent, btf))
		return 0;	/* its parent's group: the kernel copied it */
	return task_entered(cgrp, child, btf);
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

SEC("tp_btf/cgroup_rename")
int BPF_PROG(cgroup_rename_btf, struct cgroup *cgrp, const char *path)
{
	return send(cgrp, MOAT_CGROUP_RENAME, true);
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

SEC("raw_tp/cgroup_rename")
int BPF_PROG(cgroup_rename_raw, struct cgroup *cgrp, const char *path)
{
	return send(cgrp, MOAT_CGROUP_RENAME, false);
}

SEC("tp_btf/cgroup_attach_task")
int BPF_PROG(cgroup_attach_task_btf, struct cgroup *dst, const char *path,
	     struct task_struct *task, bool threadgroup)
{
	return task_entered(dst, task, true);
}

SEC("raw_tp/cgroup_attach_task")
int BPF_PROG(cgroup_attach_task_raw, struct cgroup *dst, const char *path,
	     struct task_struct *task, bool threadgroup)
{
	return task_entered(dst, task, false);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(sched_process_fork_btf, struct task_struct *parent,
	     struct task_struct *child)
{
	return forked(parent, child, true);
}

SEC("raw_tp/sched_process_fork")
int BPF_PROG(sched_process_fork_raw, struct task_struct *parent,
	     struct task_struct *child)
{
	return forked(parent, child, false);
}

char LICENSE[] SEC("license") = "GPL";
