/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOATD_BURST_H
#define MOATD_BURST_H

/*
 * The burst module: CFS burst for LC groups throttled by their own CPU
 * limit (Documentation/enforce.rst, "CPU burst").  A source, the quota
 * and burst of the LC groups that were throttled (or hold moat's burst);
 * a policy, which gives a throttled one burst up to burst/max_pct of its
 * quota and takes it back after burst/hold_s without throttling; and an
 * actuator, the only writer of the burst files, through the journal.
 */
#include "moatd.h"

extern const struct moatd_module burst_module;

/* The source: in enforce mode, the quota and burst of the groups it needs. */
void burst_sample(struct moatd *d, struct period *p);
/* The policy: this period's burst steps into @plan. */
void burst_decide(struct moatd *d, const struct period *p, struct plan *plan);
/* The actuator: @plan's burst steps, each journaled first. */
void burst_act(struct moatd *d, const struct plan *plan);
/*
 * Someone else wrote a burst file moat holds (moat_journal_check(), in
 * enforce's source): the file is theirs from now on.  Or the quota of a
 * unit moat lifted (a resize): its original now.
 */
void burst_outside(struct moatd *d, struct moatd_group *g, const char *path,
		   const char *was, const char *now);
/* Whether @name is a burst file, cpu.max.burst or cpu.cfs_burst_us. */
bool burst_file(const char *name);

/* For reporters: the burst moat holds @g to, in s of CPU; NAN: none. */
double burst_held(const struct moatd_group *g);
/* For reporters: whether @g's unit was LC this period. */
bool burst_lc(const struct moatd_group *g);
/* Whether moat lifted LC unit @g's quota; the quota, CPUs (NAN: none). */
bool burst_lifted(const struct moatd_group *g);
double burst_lift(const struct moatd_group *g);
unsigned long long burst_writes(const struct moatd *d);
unsigned long long burst_releases(const struct moatd *d);
unsigned long long burst_errors(const struct moatd *d);

#endif /* MOATD_BURST_H */
