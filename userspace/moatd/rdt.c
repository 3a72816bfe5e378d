// SPDX-License-Identifier: GPL-2.0-only
/*
 * resctrl in moatd: at start, find the mount, read what the hardware
 * allows, and say so once, or say once that there is none and go on.
 * Allocation comes next (Documentation/resctrl.rst).
 *
 * $MOAT_RESCTRL_ROOT names another tree instead of the mount: the tests'
 * FAKE trees, which follow the kernel's formats.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "log.h"
#include "moatd.h"

/* What resctrl offers, one line: "L3 cbm_mask 7ff, MB percent/10". */
static void describe(const struct moat_rdt_info *in, char *buf, size_t len)
{
	static const char *const units[] = { "percent", "absolute", "MBps" };
	size_t i, n = 0;

	buf[0] = '\0';
	for (i = 0; i < in->nres && n < len; i++) {
		const struct moat_rdt_res *r = &in->res[i];

		if (r->kind == MOAT_RDT_CACHE)
			n += snprintf(buf + n, len - n, "%s%s %u ways (cbm_mask %llx)",
				      i ? ", " : "", r->name,
				      __builtin_popcountll(r->cbm_mask),
				      (unsigned long long)r->cbm_mask);
		else
			n += snprintf(buf + n, len - n, "%s%s %s in steps of %u",
				      i ? ", " : "", r->name, units[r->unit], r->gran);
	}
}

void rdt_open(struct moatd *d)
{
	const char *fake = getenv("MOAT_RESCTRL_ROOT");
	bool cdp = false, mbps = false, amd = false;
	char why[512], what[512];
	FILE *f;
	int err;

	d->rdt_root[0] = '\0';
	if (fake && *fake) {
		snprintf(d->rdt_root, sizeof(d->rdt_root), "%s", fake);
	} else {
		f = fopen("/proc/self/mountinfo", "re");
		err = f ? moat_rdt_find_mount(f, d->rdt_root, sizeof(d->rdt_root),
					      &cdp, &mbps) : -errno;
		if (f)
			fclose(f);
		if (err) {
			d->rdt_root[0] = '\0';
			pr_info("resctrl: not mounted (no Intel RDT or AMD PQoS here, or `mount -t resctrl resctrl /sys/fs/resctrl` not done): no cache or memory bandwidth allocation");
			return;
		}
	}
	f = fopen("/proc/cpuinfo", "re");
	if (f) {
		amd = moat_rdt_cpu_is_amd(f);
		fclose(f);
	}
	err = moat_rdt_info_read(d->rdt_root, amd, mbps, &d->rdt, why, sizeof(why));
	if (err) {
		pr_warn("resctrl at %s: %s: no cache or memory bandwidth allocation",
			d->rdt_root, why);
		d->rdt_root[0] = '\0';
		return;
	}
	describe(&d->rdt, what, sizeof(what));
	pr_info("resctrl at %s%s: %s; %u CLOSIDs, %u RMIDs", d->rdt_root,
		fake && *fake ? " ($MOAT_RESCTRL_ROOT)" : "", what,
		d->rdt.num_closids, d->rdt.num_rmids);
}

static int show_root(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd *d = k->owner;

	return snprintf(buf, len, "%s", d->rdt_root) >= (int)len ? -EOVERFLOW : 0;
}

static int show_schemata(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd *d = k->owner;
	size_t i, n = 0;

	buf[0] = '\0';
	for (i = 0; *d->rdt_root && i < d->rdt.nres && n < len; i++)
		n += snprintf(buf + n, len - n, "%s%s", i ? " " : "",
			      d->rdt.res[i].name);
	return n >= len ? -EOVERFLOW : 0;
}

static int show_closids(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd *d = k->owner;

	return snprintf(buf, len, "%u", *d->rdt_root ? d->rdt.num_closids : 0) >=
	       (int)len ? -EOVERFLOW : 0;
}

static int show_rmids(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd *d = k->owner;

	return snprintf(buf, len, "%u", *d->rdt_root ? d->rdt.num_rmids : 0) >=
	       (int)len ? -EOVERFLOW : 0;
}

int rdt_add_knobs(struct moatd *d)
{
	const struct moat_knob knobs[] = {
		{ .path = "resctrl/root", .type = MOAT_KNOB_SHOW, .show = show_root },
		{ .path = "resctrl/schemata", .type = MOAT_KNOB_SHOW,
		  .show = show_schemata },
		{ .path = "resctrl/num_closids", .type = MOAT_KNOB_SHOW,
		  .show = show_closids },
		{ .path = "resctrl/num_rmids", .type = MOAT_KNOB_SHOW,
		  .show = show_rmids },
	};

	return moat_knob_add_all(d->tree, "", knobs,
				 sizeof(knobs) / sizeof(knobs[0]), d);
}
