// SPDX-License-Identifier: GPL-2.0-only
/*
 * The weight lever (weights.h): a BE pod's pod-level cpu.weight or
 * cpu.shares, scaled by the one factor the controller holds BE pods to,
 * through lib/actuator.c's cpu_weight and the journal.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "actuator.h"
#include "log.h"
#include "weights.h"

/* The kernel's least weight, in v2's scale: v2 1, v1 2 shares. */
static double least(const struct moatd *d)
{
	return d->cpu->v2 ? 1 : 200.0 / 1024;
}

static const char *file(const struct moatd *d)
{
	return moat_act_cpu_weight.files[d->cpu->v2][0];
}

void weights_read(const struct moatd *d, const struct moatd_group *unit,
		  struct pod_weight *w)
{
	const struct moat_journal_entry *e;
	char path[PATH_MAX];
	double v;

	w->orig = NAN;
	w->ok = false;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", unit->dir, file(d)) >=
	    sizeof(path) || !moat_act_supported(&moat_act_cpu_weight, unit->dir, d->cpu->v2))
		return;
	e = moat_journal_find(d->journal, path);
	if (e) {
		/* moat holds it: the original is the journal's, in the file's units */
		long long n;
		char end;

		if (sscanf(e->orig, "%lld%c", &n, &end) != 1 || n <= 0)
			return;
		v = d->cpu->v2 ? n : n * 100.0 / 1024;
	} else if (moat_act_cpu_weight.read(unit->dir, d->cpu->v2, &v) || !(v > 0)) {
		return;
	}
	w->orig = v;
	w->floor = weights_floor(d, v);
	w->ok = true;
}

double weights_floor(const struct moatd *d, double orig)
{
	/* a hair over the least is the least: v1's 2 shares read as 0.195 */
	return orig > least(d) * 1.001 ? least(d) / orig : 1;
}

double weights_at(const struct moatd *d, const struct pod_weight *w, double factor)
{
	if (isnan(w->orig))
		return NAN;
	if (!(factor < 1))
		return w->orig;
	return fmax(least(d), w->orig * factor);
}

int weights_apply(struct moatd *d, struct moatd_group *unit,
		  struct pod_weight *w, double factor)
{
	char path[PATH_MAX];
	int err;

	snprintf(path, sizeof(path), "%s/%s", unit->dir, file(d));
	if (!(factor < 1) && !moat_journal_find(d->journal, path))
		err = 0;	/* nothing of moat's there */
	else if (!(factor < 1))
		err = moat_act_restore(&moat_act_cpu_weight, d->journal, unit->dir,
				       d->cpu->v2);
	else if (!w->ok)
		err = -ENODATA;
	else
		err = moat_act_cpu_weight.apply(d->journal, unit->dir, d->cpu->v2,
						weights_at(d, w, factor));
	if (err && err != w->err && err != -ENOENT && err != -ENODEV)
		pr_warn("be pod %s (%s): %s %s: %s", unit->gid.id, unit->path,
			factor < 1 ? "set" : "put back", file(d), moat_kfile_strerror(err));
	w->err = err;
	return err;
}
