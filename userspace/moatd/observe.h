/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOATD_OBSERVE_H
#define MOATD_OBSERVE_H

/*
 * The observe module, a source: each group's cgroup files (CPU usage,
 * CFS throttling, pressure, memory), and the knobs of each group's
 * window, groups/<id>/rqlat_p99_us and the rest.
 */
#include "moatd.h"

extern const struct moatd_module observe_module;

/* Each group's counters into its sample, and its window from them. */
void observe_sample(struct moatd *d, struct period *p);

/*
 * The fingerprint of the set of cgroups below the scan root that this
 * period's read of the cgroup iterator found (moat_cgroup_set_fingerprint()), in
 * @fp; false where the iterator is not the source or its read failed.
 */
bool observe_cgroups_fingerprint(const struct moatd *d, __u64 *fp);

#endif /* MOATD_OBSERVE_H */
