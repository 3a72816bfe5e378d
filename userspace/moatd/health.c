// SPDX-License-Identifier: GPL-2.0-only
/* moatd's health, for /healthz and the metrics (health.h). */
#include <limits.h>
#include <stdio.h>
#include "enforce.h"
#include "health.h"

bool moatd_health(struct moatd *d, char *why, size_t len)
{
	char stale[PATH_MAX + 128];

	if (moatd_since_cycle_us(d) > 3000.0 * d->period_ms) {
		snprintf(why, len, "stalled: no cycle for 3 periods");
		return false;
	}
	if (enforce_journal_stale(d, stale, sizeof(stale))) {
		snprintf(why, len,
			 "degraded: %s; moatd changes nothing it could not put back after a crash",
			 stale);
		return false;
	}
	return true;
}
