/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_MOUNTINFO_H
#define MOAT_MOUNTINFO_H

#include <stdbool.h>
#include <stdio.h>

#define MOAT_CG_PATH_MAX 512
#define MOAT_CG_MAX_V1 16

/* How cgroups are mounted, in systemd's words. */
enum moat_cg_mode {
	MOAT_CG_NONE,		/* no cgroup filesystem mounted */
	MOAT_CG_UNIFIED,	/* cgroup2 only */
	MOAT_CG_HYBRID,		/* v1 controllers beside a cgroup2 mount */
	MOAT_CG_LEGACY,		/* v1 only */
};

/* One mounted cgroup hierarchy. */
struct moat_cg_hierarchy {
	char mnt[MOAT_CG_PATH_MAX];	/* mount point */
	char root[MOAT_CG_PATH_MAX];	/* cgroup shown at mnt, "/" mostly */
	char opts[128];			/* v1: super options, e.g. "rw,cpu" */
	bool v2;
};

struct moat_cg_layout {
	enum moat_cg_mode mode;
	bool has_v2;
	struct moat_cg_hierarchy v2;
	unsigned int nr_v1;
	struct moat_cg_hierarchy v1[MOAT_CG_MAX_V1];
};

/**
 * moat_cg_layout_parse() - find the cgroup hierarchies in mountinfo text
 * (proc(5) format) mounted at or below @under ("": anywhere).  The first
 * mount of each hierarchy wins.  Below a non-empty @under, a root shown
 * above the cgroup namespace's ("/..") is the hierarchy's root: the
 * host's cgroupfs bind-mounted into a pod (hostroot.h).
 *
 * Return: 0, or -EINVAL for a malformed line, -ENAMETOOLONG for a path
 * longer than MOAT_CG_PATH_MAX, -E2BIG for too many v1 hierarchies.
 */
int moat_cg_layout_parse(FILE *mountinfo, const char *under,
			 struct moat_cg_layout *out);

/**
 * moat_cg_layout_read() - moat_cg_layout_parse() on /proc/self/mountinfo,
 * below the host root.
 */
int moat_cg_layout_read(struct moat_cg_layout *out);

/**
 * moat_cg_layout_find() - the hierarchy that has @controller: its v1
 * mount if one lists it, else the cgroup2 mount.
 *
 * Return: the hierarchy, or NULL when neither exists.
 */
const struct moat_cg_hierarchy *
moat_cg_layout_find(const struct moat_cg_layout *layout,
		    const char *controller);

const char *moat_cg_mode_name(enum moat_cg_mode mode);

#endif /* MOAT_MOUNTINFO_H */
