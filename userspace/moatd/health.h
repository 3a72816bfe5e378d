/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOATD_HEALTH_H
#define MOATD_HEALTH_H

/*
 * Whether moatd does its job: what /healthz answers and moat_healthy
 * says, decided in one place.
 */
#include <stddef.h>
#include "moatd.h"

/**
 * moatd_health() - true while control cycles run and the journal can be
 * saved; else false, with why in @why ("stalled: ...", "degraded: ...").
 */
bool moatd_health(const struct moatd *d, char *why, size_t len);

#endif /* MOATD_HEALTH_H */
