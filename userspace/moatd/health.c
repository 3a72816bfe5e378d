// SPDX-License-Identifier: GPL-2.0-only
/* moatd's health, for /healthz and the metrics (health.h). */
#include <limits.h>
#include <stdio.h>
#include "enforce.h"
#include "health.h"

bool moatd_health(const struct moatd *d, char *why, size_t len)
{
	char stale[PATH_MAX + 128];
	/*
	 * The next cycle is due a period after the last one, at the period
	 * it ran at, or one period after a change re-armed the timer: a
	 * period lowered from 20 s to 500 ms is not stalled before then.
	 */
	unsigned int ms = d->period_ms > d->cycle_period_ms ? d->period_ms :
			  d->cycle_period_ms;

	if (moatd_since_cycle_us(d) > 3000.0 * ms) {
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
