// SPDX-License-Identifier: GPL-2.0-only
/*
 * Where run-queue delay comes from: the BPF programs (lib/rqlat_bpf.c),
 * or, where they cannot load (no BTF, no privilege, an old kernel), the
 * kernel's delay accounting over netlink (lib/taskstats.c).  The knob
 * rqlat/source, read at start: auto (BPF, else taskstats), bpf, taskstats.
 * Either way each group gets a cumulative histogram, and everything after
 * it (windows, percentiles, the controller) is the same; taskstats gives
 * no blame, so the controller then picks culprits by CPU usage.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include "log.h"
#include "moatd.h"

enum { SRC_AUTO, SRC_BPF, SRC_TASKSTATS };
static const char *const sources[] = { "auto", "bpf", "taskstats", NULL };

static int show_active(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd *d = k->owner;

	return snprintf(buf, len, "%s", d->rqlat ? "bpf" : d->ts ? "taskstats" :
			"none") >= (int)len ? -EOVERFLOW : 0;
}

static void store_source(const struct moat_knob *k, unsigned int u,
			 const char *val)
{
	struct moatd *d = k->owner;

	d->rqlat_source = u;
	if (d->started)
		pr_info("%s = '%s': used from moatd's next start", k->path, val);
}

int delay_add_knobs(struct moatd *d)
{
	const struct moat_knob knobs[] = {
		{ .path = "rqlat/source", .type = MOAT_KNOB_CHOICE, .writable = true,
		  .choices = sources, .data = &d->rqlat_source,
		  .store = store_source },
		{ .path = "rqlat/active_source", .type = MOAT_KNOB_SHOW,
		  .show = show_active },
	};

	return moat_knob_add_all(d->tree, "", knobs,
				 sizeof(knobs) / sizeof(knobs[0]), d);
}

int delay_open(struct moatd *d, const struct moat_rqlat_opts *ro,
	       const char *state_dir, bool verbose)
{
	char journal[PATH_MAX] = "";
	int err = -ENOENT;

	if (*state_dir &&
	    (size_t)snprintf(journal, sizeof(journal), "%s/taskstats.journal",
			     state_dir) >= sizeof(journal))
		return -ENAMETOOLONG;
	/* a killed moatd that used taskstats left task_delayacct on */
	if (*journal && d->rqlat_source != SRC_TASKSTATS)
		moat_taskstats_recover(journal);
	if (d->rqlat_source != SRC_TASKSTATS) {
		err = moat_rqlat_open(ro, &d->rqlat);
		if (!err)
			return 0;
		if (verbose)
			moat_log_libbpf_tail();
		if (d->rqlat_source == SRC_BPF)
			return err;
		pr_warn("rqlat: BPF did not load (%s): falling back to delay accounting (taskstats): coarser, and no blame",
			strerror(-err));
	}
	err = moat_taskstats_open(journal, &d->ts);
	if (err)
		return err;
	pr_info("rqlat: run-queue delay from taskstats (kernel.task_delayacct on while moatd runs)");
	return 0;
}

void delay_close(struct moatd *d)
{
	moat_rqlat_close(d->rqlat);
	moat_taskstats_close(d->ts);
	d->rqlat = NULL;
	d->ts = NULL;
}

void delay_read_group(struct moatd *d, struct moatd_group *g,
		      struct moat_rqlat_hist *cum)
{
	int err = moat_taskstats_group(d->ts, g->dir, d->cpu->v2, &g->ts);

	if (err && err != -ENOENT && err != -ENODEV)
		pr_debug("group %s: taskstats: %s", g->gid.id, strerror(-err));
	*cum = g->ts.cum;
}
