/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOATD_PROM_H
#define MOATD_PROM_H

/*
 * Prometheus's text format 0.0.4, the pieces every reporter writes it
 * with: a family's header, a label value escaped, a number as Go's
 * strconv writes it.
 */
#include <stdbool.h>
#include <stdio.h>
#include "hist.h"

void prom_family(FILE *f, const char *name, const char *type, const char *help);
void prom_label_value(FILE *f, const char *s);
/* " <value>\n": NaN, +Inf, -Inf, or the shortest that reads back. */
void prom_value(FILE *f, double v);
/* @v in the fewest digits that read back as @v, into @buf. */
const char *prom_shortest(char *buf, size_t len, double v);

/**
 * prom_histogram() - the samples of @name (a histogram family) for one
 * series, @labels ("a=\"b\",..."): a bucket per slot of @h where
 * @export[slot] says, labelled @le[slot] ("le=\"...\""), each the sum of
 * the slots up to it; +Inf and _count the sum of every slot, so that no
 * bucket is ever over +Inf, however @h's count was read; _sum in seconds.
 */
void prom_histogram(FILE *f, const char *name, const char *labels,
		    const struct moat_rqlat_hist *h,
		    const char le[][40], const bool *export);

#endif /* MOATD_PROM_H */
