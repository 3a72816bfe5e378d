// SPDX-License-Identifier: GPL-2.0-only
/* The userspace side of bpf/cgroup_events.bpf.c. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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
	void *removed_ctx;
};

static int on_event(void *ctx, void *data, size_t len)
{
	struct moat_cgroup_events *ev = ctx;
	const struct moat_cgroup_event *e = data;

	if (len < sizeof(*e))
		return 0;
	pr_debug("cgroup %s: id %llu", e->type == MOAT_CGROUP_MKDIR ?
		 "made" : "removed", (unsigned long long)e->id);
	if (e->type == MOAT_CGROUP_RMDIR && ev->removed)
		ev->removed(e->id, ev->removed_ctx);
	ev->changed = true;
	return 0;
}

int moat_cgroup_events_open(struct moat_cgroup_events **out)
{
	struct moat_cgroup_events *ev = calloc(1, sizeof(*ev));
	bool btf;
	int err;

	if (!ev)
		return -ENOMEM;
	ev->skel = cgroup_events__open();
	if (!ev->skel) {
		err = -errno;
		goto err_free;
	}
	btf = moat_probe_tp_btf("cgroup_mkdir") && moat_probe_tp_btf("cgroup_rmdir");
	bpf_program__set_autoload(ev->skel->progs.cgroup_mkdir_btf, btf);
	bpf_program__set_autoload(ev->skel->progs.cgroup_rmdir_btf, btf);
	bpf_program__set_autoload(ev->skel->progs.cgroup_mkdir_raw, !btf);
	bpf_program__set_autoload(ev->skel->progs.cgroup_rmdir_raw, !btf);
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
	pr_info("cgroup events: attached %s cgroup_mkdir and cgroup_rmdir: new and removed groups are found at once",
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
				moat_cgroup_removed_fn removed, void *ctx)
{
	__u64 dropped = ev->skel->bss->events_dropped;
	bool changed;

	ev->removed = removed;
	ev->removed_ctx = ctx;
	ring_buffer__consume(ev->rb);
	ev->removed = NULL;
	changed = ev->changed || dropped != ev->dropped_seen;
	if (dropped != ev->dropped_seen)
		pr_debug("cgroup events: %llu dropped: walking the hierarchy",
			 (unsigned long long)(dropped - ev->dropped_seen));
	ev->dropped_seen = dropped;
	ev->changed = false;
	return changed;
}
