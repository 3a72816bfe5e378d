/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOATD_RDT_PRIV_H
#define MOATD_RDT_PRIV_H

/*
 * The rdt module's parts and what they share: rdt.c (moat's control
 * groups, their allocation, the cycle, the knobs), rdt_tasks.c (which
 * thread goes in which group), rdt_mon.c (the monitoring groups and
 * their counters).  The module's own; others include rdt.h.
 */
#include <stdio.h>
#include <string.h>
#include "moatd.h"
#include "rdt.h"
#include "resctrl.h"

#define MAX_MADE	512

enum { LC, BE, NCLASS };

/* moat_lc and moat_be */
extern const char *const rdt_class_dir[NCLASS];

struct rdt_class {
	char ways_text[64];		/* resctrl/<class>/l3_ways */
	struct moat_rdt_ways ways;
	unsigned int mb_pct;		/* resctrl/<class>/mb_percent */
	char schemata[4096];		/* as last read back */
	size_t ntasks;
	struct rdt_mon mon;
};

struct rdt {
	struct moatd *d;
	char root[PATH_MAX];		/* "": no resctrl */
	char mnt[PATH_MAX];		/* where resctrl/mount mounts it:
					   the host's /sys/fs/resctrl */
	struct moat_rdt_info info;
	unsigned int mount, allocate, reconcile_ms;
	unsigned int be_ways_min, be_mb_min;
	bool mounted;			/* moatd mounted resctrl (journaled) */
	bool refused;			/* said why; again on a change */
	struct timespec refused_at;	/* start() refused: when */
	char said[PATH_MAX + 640];	/* the refusal last logged */
	char state[PATH_MAX + 640];
	struct rdt_class c[NCLASS];
	unsigned int be_cap_ways, be_cap_mb;	/* the plan's; 0: none */
	char *made[MAX_MADE];		/* groups moatd made, oldest first */
	size_t nmade;
	struct timespec last_reconcile, last_monitor;
	unsigned int monitor_ms;
	bool reconcile_now;
	struct { __u64 unit; __u32 tid; } pending[256];
	size_t npending;
	bool pending_lost;
	__u64 *tracked;			/* the units whose tasks BPF follows,
					   each id * 2 + its class */
	size_t ntracked;
	bool rmids_out;			/* until a monitoring group goes */
	unsigned long long moved, gone, write_errors, events;
};

/* Its state of a group: of a unit, its monitoring group. */
struct rdt_group {
	bool mon_on;			/* it has one */
	struct rdt_mon mon;
};

/* Monitoring not read yet: reporters say nothing, not 0. */
extern const struct rdt_mon rdt_mon_unknown;

static inline struct rdt *R(const struct moatd *d)
{
	return moatd_mod(d, MOD_RDT);
}

static inline struct rdt_group *RG(const struct moatd_group *g)
{
	return group_mod(g, MOD_RDT);
}

static inline bool alive(const struct moatd *d)
{
	return *R(d)->root;
}

static inline bool made(const struct rdt *r, const char *rel)
{
	size_t i;

	for (i = 0; i < r->nmade; i++)
		if (!strcmp(r->made[i], rel))
			return true;
	return false;
}

static inline bool allocating(const struct moatd *d)
{
	return alive(d) && made(R(d), rdt_class_dir[LC]) &&
	       made(R(d), rdt_class_dir[BE]);
}

static inline int unit_class(const struct moatd_group *u)
{
	return u->class == MOAT_CLASS_LC ? LC : u->class == MOAT_CLASS_BE ? BE : -1;
}

/* A unit's monitoring group, under its class's control group @c. */
static inline void mon_rel(const struct moatd_group *u, int c, char *buf, size_t len)
{
	snprintf(buf, len, "%s/mon_groups/%s", rdt_class_dir[c], u->gid.id);
}

/* rdt.c: mkdir @rel under the root, journaled first (0, or -errno with
   *@why); its rmdir. */
int rdt_make_group(struct moatd *d, const char *rel, char *why, size_t len);
void rdt_remove_group(struct moatd *d, const char *rel);

/* rdt_tasks.c: each unit's threads into its groups; the units whose new
   threads BPF reports (@on), or none. */
void rdt_reconcile(struct moatd *d);
void rdt_track(struct moatd *d, bool on);

/* rdt_mon.c: a monitoring group per unit while RMIDs last; a group's
   counters, its rates over at least @min_ms. */
void rdt_mon_groups(struct moatd *d);
void rdt_mon_read(const struct moatd *d, const char *rel, struct rdt_mon *m,
		  unsigned int min_ms);

#endif /* MOATD_RDT_PRIV_H */
