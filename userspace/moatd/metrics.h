/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOATD_METRICS_H
#define MOATD_METRICS_H

/* /metrics, a reporter: Prometheus's text format from the committed period. */
#include <stdio.h>
#include "moatd.h"

int metrics_write(const struct moatd *d, FILE *f);

#endif /* MOATD_METRICS_H */
