// SPDX-License-Identifier: GPL-2.0-only
/*
 * The quota lift's decision (burstpol.h).  koordlet's CPU Burst scales a
 * quota the same way: 1.2x up, 0.8x down, to 300% of the limit.
 */
#include <math.h>
#include "burstpol.h"

#define LIFT_UP		1.2
#define LIFT_DOWN	0.8
#define EPS_CPUS	0.001	/* a step smaller than a 100 us quota is none */

double moat_lift_step(const struct moat_lift_in *in)
{
	double busy_pct = in->node_busy / in->node_cpus * 100, v;
	bool spent = !in->burst_possible || in->burst_s >= in->burst_want - 0.5e-6;
	bool members_bind = in->members_cap <= in->orig + EPS_CPUS;

	if (in->lifted && (!in->lc || !in->lift || !(in->quota > 0) || members_bind))
		return NAN;
	if (!(in->quota > 0) || !(in->node_cpus > 0))
		return 0;
	if (in->lift && in->lc && in->throttled && spent && busy_pct < in->busy_pct &&
	    in->members_cap > in->quota + EPS_CPUS) {
		v = fmin(fmin(fmin(in->quota * LIFT_UP, in->orig * in->max_pct / 100),
			      in->quota + (in->node_cpus - in->node_busy - in->claimed)),
			 in->members_cap);
		return v > in->quota + EPS_CPUS ? v : 0;
	}
	if (in->lifted && (!(busy_pct < in->busy_pct + MOAT_LIFT_BUSY_HYST) ||
			   in->usage < in->orig * MOAT_LIFT_FITS ||
			   (isnan(in->usage) && in->quiet_s > MOAT_LIFT_QUIET_S))) {
		v = in->quota * LIFT_DOWN;
		return v > in->orig + EPS_CPUS ? v : NAN;
	}
	return 0;
}
