// SPDX-License-Identifier: GPL-2.0-only
/*
 * resctrl in moatd: monitoring.  A monitoring group for each LC and BE
 * unit while RMIDs last (the class's control group alone after), and
 * their counters: llc_occupancy now, the MBM byte counts as rates over
 * a window of resctrl/monitor_ms.
 */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "log.h"
#include "rdt_priv.h"

/* The monitoring groups: one per LC and BE unit, while RMIDs last. */
void rdt_mon_groups(struct moatd *d)
{
	struct rdt *r = R(d);
	char rel[PATH_MAX], why[256];
	size_t i, j;

	/* those of units no more, or of another class now */
	for (j = r->nmade; j-- > 0;) {
		const char *slash = strstr(r->made[j], "/mon_groups/");
		bool keep = false;

		if (!slash)
			continue;
		for (i = 0; i < d->nr_groups && !keep; i++) {
			struct moatd_group *u = d->groups[i];

			if (u->unit != u || unit_class(u) < 0 || !RG(u)->mon_on)
				continue;
			mon_rel(u, unit_class(u), rel, sizeof(rel));
			keep = !strcmp(rel, r->made[j]);
		}
		if (!keep) {
			snprintf(rel, sizeof(rel), "%s", r->made[j]);
			rdt_remove_group(d, rel);
			r->rmids_out = false;	/* an RMID may be free again */
		}
	}
	for (i = 0; i < d->nr_groups; i++) {
		struct moatd_group *u = d->groups[i];
		int c = unit_class(u);

		if (u->unit != u || c < 0) {
			RG(u)->mon_on = false;
			continue;
		}
		mon_rel(u, c, rel, sizeof(rel));
		RG(u)->mon_on = made(r, rel);
		if (RG(u)->mon_on || r->rmids_out || !R(d)->info.num_rmids)
			continue;
		if (!rdt_make_group(d, rel, why, sizeof(why))) {
			RG(u)->mon_on = true;
			RG(u)->mon = rdt_mon_unknown;
			r->reconcile_now = true;
		} else {
			r->rmids_out = true;
			pr_info("resctrl: mkdir %s: %s: groups from here on are monitored with their class only",
				rel, why);
		}
	}
}

/* ---- monitoring ---- */

/* Sum @event over @rel's mon_data domains; -1: none readable. */
static double mon_sum(const struct moatd *d, const char *rel, const char *event)
{
	char path[PATH_MAX * 3], v[64];
	struct dirent *e;
	double sum = -1;
	DIR *dp;

	snprintf(path, sizeof(path), "%s/%s/mon_data", R(d)->root, rel);
	dp = opendir(path);
	while (dp && (e = readdir(dp))) {
		char *end;
		double x;

		if (strncmp(e->d_name, "mon_L3_", 7))
			continue;
		snprintf(path, sizeof(path), "%s/%s/mon_data/%s", R(d)->root,
			 rel, e->d_name);
		/* "Unavailable" or "Error" instead of a number: not counted */
		if (moat_rdt_read(path, event, v, sizeof(v)))
			continue;
		x = strtod(v, &end);
		if (end == v)
			continue;
		sum = (sum < 0 ? 0 : sum) + x;
	}
	if (dp)
		closedir(dp);
	return sum;
}

/*
 * Occupancy now; bandwidth as a rate over a window of at least @min_ms,
 * so that when the counters are read (a cross-CPU call, behind the
 * scheduler's delays) weighs little against the window.
 */
void rdt_mon_read(const struct moatd *d, const char *rel, struct rdt_mon *m,
		  unsigned int min_ms)
{
	double total = mon_sum(d, rel, "mbm_total_bytes");
	double local = mon_sum(d, rel, "mbm_local_bytes");
	struct timespec now;
	double s;

	clock_gettime(CLOCK_MONOTONIC, &now);
	m->llc_bytes = R(d)->info.llc_occupancy ? mon_sum(d, rel, "llc_occupancy") : -1;
	s = now.tv_sec - m->at.tv_sec + (now.tv_nsec - m->at.tv_nsec) / 1e9;
	/* a counter that went back (an RMID reused) restarts the rate */
	if (m->valid && total >= m->total && local >= m->local &&
	    s * 1000 < min_ms)
		return;		/* the window goes on */
	m->total_bps = m->valid && total >= m->total && s > 0 ?
		       (total - m->total) / s : NAN;
	m->local_bps = m->valid && local >= m->local && s > 0 ?
		       (local - m->local) / s : NAN;
	m->total = total;
	m->local = local;
	m->at = now;
	m->valid = total >= 0;
}
