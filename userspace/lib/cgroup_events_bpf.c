// SPDX-License-Identifier: GPL-2.0-only
/* The userspace side of bpf/cgroup_events.bpf.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "bpf_probe.h"
#include "cgroup_events.h"	/* bpf/: the event type */
#include "cgroup_events_bpf.h"
#include "cgroup_events.skel.h"
#include "log.h"

struct moat_cgroup_events {
	struct cgroup_events *skel;
	struct ring_buffer *rb;
	__u64 dropped_seen;
	bool changed;
	moat_cgroup_removed_fn removed;	/* during consume() */
	moat_cgroup_task_fn task;
	void *cb_ctx;
};

static int on_event(void *ctx, void *data, size_t len)
{
	struct moat_cgroup_events *ev = ctx;
	const struct moat_cgroup_event *e = data;

	if (len < sizeof(*e))
		return 0;
	if (e->type == MOAT_CGROUP_TASK) {
		if (ev->task)
			ev->task(e->id, e->tid, ev->cb_ctx);
		return 0;
	}
	pr_debug("cgroup %s: id %llu", e->type == MOAT_CGROUP_MKDIR ? "made" :
		 e->type == MOAT_CGROUP_RENAME ? "renamed" : "removed",
		 (unsigned long long)e->id);
	if ((e->type == MOAT_CGROUP_RMDIR || e->type == MOAT_CGROUP_RMDIR_ELSEWHERE) &&
	    ev->removed)
		ev->removed(e->id, ev->cb_ctx);
	if (e->type != MOAT_CGROUP_RMDIR_ELSEWHERE)
		ev->changed = true;
	return 0;
}

int moat_cgroup_events_open(__u64 scan_root, struct moat_cgroup_events **out)
{
	struct moat_cgroup_events *ev = calloc(1, sizeof(*ev));
	bool btf, attach_btf, fork_btf;
	int err;

	if (!ev)
		return -ENOMEM;
	ev->skel = cgroup_events__open();
	if (!ev->skel) {
		err = -errno;
		goto err_free;
	}
	ev->skel->rodata->scan_root = scan_root;
	btf = moat_probe_tp_btf("cgroup_mkdir") && moat_probe_tp_btf("cgroup_rmdir") &&
	      moat_probe_tp_btf("cgroup_rename");
	bpf_program__set_autoload(ev->skel->progs.cgroup_mkdir_btf, btf);
	bpf_program__set_autoload(ev->skel->progs.cgroup_rmdir_btf, btf);
	bpf_program__set_autoload(ev->skel->progs.cgroup_rename_btf, btf);
	bpf_program__set_autoload(ev->skel->progs.cgroup_mkdir_raw, !btf);
	bpf_program__set_autoload(ev->skel->progs.cgroup_rmdir_raw, !btf);
	bpf_program__set_autoload(ev->skel->progs.cgroup_rename_raw, !btf);
	attach_btf = moat_probe_tp_btf("cgroup_attach_task");
	fork_btf = moat_probe_tp_btf("sched_process_fork");
	bpf_program__set_autoload(ev->skel->progs.cgroup_attach_task_btf, attach_btf);
	bpf_program__set_autoload(ev->skel->progs.cgroup_attach_task_raw, !attach_btf);
	bpf_program__set_autoload(ev->skel->progs.sched_process_fork_btf, fork_btf);
	bpf_program__set_autoload(ev->skel->progs.sched_process_fork_raw, !fork_btf);
	moat_vmlinux_btf_drop();	/* libbpf parses its own */
	err = cgroup_events__load(ev->skel);
	if (!err)
		err = cgroup_events__attach(ev->skel);
	if (err)
		goto err_destroy;
	ev->rb = ring_buffer__new(bpf_map__fd(ev->skel->maps.events), on_event,
				  ev, NULL);
	if (!ev->rb) {
		err = -errno;
		goto err_destroy;
	}
	pr_info("cgroup events: attached %s cgroup_mkdir, cgroup_rmdir and cgroup_rename: new, removed and renamed groups are found at once; cgroup_attach_task and sched_process_fork for the tasks of tracked groups",
		btf ? "tp_btf" : "raw_tp");
	*out = ev;
	return 0;

err_destroy:
	cgroup_events__destroy(ev->skel);
err_free:
	free(ev);
	pr_warn("cgroup events: cannot attach (%s): the hierarchy is walked every period instead",
		strerror(-err));
	return err;
}

void moat_cgroup_events_close(struct moat_cgroup_events *ev)
{
	if (!ev)
		return;
	ring_buffer__free(ev->rb);
	cgroup_events__destroy(ev->skel);
	free(ev);
}

bool moat_cgroup_events_consume(struct moat_cgroup_events *ev,
				moat_cgroup_removed_fn removed,
				moat_cgroup_task_fn task, void *ctx)
{
	__u64 dropped = ev->skel->bss->events_dropped;
	bool changed;

	ev->removed = removed;
	ev->task = task;
	ev->cb_ctx = ctx;
	ring_buffer__consume(ev->rb);
	ev->removed = NULL;
	ev->task = NULL;
	changed = ev->changed || dropped != ev->dropped_seen;
	if (dropped != ev->dropped_seen)
		pr_debug("cgroup events: %llu dropped: walking the hierarchy",
			 (unsigned long long)(dropped - ev->dropped_seen));
	ev->dropped_seen = dropped;
	ev->changed = false;
	return changed;
}

int moat_cgroup_events_fd(const struct moat_cgroup_events *ev)
{
	return ring_buffer__epoll_fd(ev->rb);
}

int moat_cgroup_events_track(struct moat_cgroup_events *ev, const __u64 *ids,
			     size_t n)
{
	int fd = bpf_map__fd(ev->skel->maps.tracked);
	__u64 key, next;
	__u8 one = 1;
	size_t i;

	ev->skel->bss->tracking = false;
	/* empty it: deleting the key just read, from the start each time */
	while (!bpf_map_get_next_key(fd, NULL, &next)) {
		key = next;
		if (bpf_map_delete_elem(fd, &key))
			return -errno;
	}
	if (n > MOAT_CGROUP_TRACKED_MAX)
		return -E2BIG;
	for (i = 0; i < n; i++)
		if (bpf_map_update_elem(fd, &ids[i], &one, BPF_ANY))
			return -errno;
	ev->skel->bss->tracking = n > 0;
	return 0;
}
