/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOATD_CPI_H
#define MOATD_CPI_H

/*
 * The cpi module: a source, each group's PMU counters (lib/pmu_bpf.c),
 * and a policy, CPI² detection over the units (lib/cpi2.c), whose
 * victims and suspects go into the units for the controller.
 */
#include "moatd.h"

extern const struct moatd_module cpi_module;

/* Each group's counters into its sample, and its window's CPI. */
void cpi_sample(struct moatd *d, struct period *p);
/* One window of the detector over the units; it writes their cpi fields. */
void cpi_detect(struct moatd *d, struct period *p);

/* For reporters: whether @role (0 cycles, 1 instructions, 2 LLC misses)
   is counted; times an LC unit became a victim; a group's state. */
bool cpi_counting(const struct moatd *d, unsigned int role);
unsigned long long cpi_victims(const struct moatd *d);
/* Whether the PMU's programs run; into *@drops, charges a full map lost. */
bool cpi_drops(const struct moatd *d, unsigned long long *drops);
/* 1 while @g's unit is a victim, 0 when not, NAN before it is judged. */
double cpi_group_victim(const struct moatd_group *g);

#endif /* MOATD_CPI_H */
