/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOATD_DELAY_H
#define MOATD_DELAY_H

/*
 * The delay module, a source: each group's run-queue waits, from the BPF
 * programs (lib/rqlat_bpf.c) or from the kernel's delay accounting
 * (lib/schedstat.c), and, from BPF only, the blame of each wait.
 */
#include "moatd.h"
#include "rqlat.h"

extern const struct moatd_module delay_module;

/*
 * This period's cumulative waits of each group (g->sample.rqlat), their
 * window (g->win_hist, g->win.rqlat_*), and the blame of group pairs
 * (p->blame).  Cgroups gone (p->gone) leave the maps first; LC groups
 * are the ones watched.
 */
void delay_sample(struct moatd *d, struct period *p);

/* For reporters: events dropped, by reason; false without BPF. */
bool delay_drops(const struct moatd *d, __u64 drops[MOAT_DROP_NR]);
/* For reporters: each BPF program's run time and count, where kept. */
int delay_for_each_prog(const struct moatd *d,
			int (*fn)(const char *name, __u64 run_ns, __u64 runs,
				  void *ctx), void *ctx);
/* Whether waits are blamed (BPF); schedstat blames none. */
bool delay_blames(const struct moatd *d);

#endif /* MOATD_DELAY_H */
