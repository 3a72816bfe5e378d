/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOATD_HINTS_H
#define MOATD_HINTS_H

/*
 * The hints module: placement hints (Documentation/hints.rst) from the
 * committed period: /hints, the moat_hint_* gauges, and the Node
 * publisher's values.  Its knobs are the margins: hints/cpu_margin_pct
 * and hints/memory_margin_pct.
 */
#include <stdio.h>
#include "moatd.h"

extern const struct moatd_module hints_module;

int hints_write_metrics(const struct moatd *d, FILE *f);
int hints_write_json(const struct moatd *d, FILE *f);

struct kube_hints {
	double be_cpus, be_memory;	/* NAN: not known yet */
	double cpu_interference, memory_interference, cache_interference;
	double node_interference;	/* in [0, 1], as in /metrics */
	/* the worst LC signal and its culprit, for the Node condition */
	char reason[32], message[768];
	char *json;			/* /hints without its time: to free */
};
int hints_for_kube(const struct moatd *d, struct kube_hints *out);
/*
 * Whether an interference this period is 1 or more (an LC unit over its
 * target, the node's memory pressure, a CPI victim): what taints the
 * node.  Cheap (no JSON): asked every period.
 */
bool hints_over(const struct moatd *d);

#endif /* MOATD_HINTS_H */
