/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOATD_EVENTS_H
#define MOATD_EVENTS_H

/*
 * Kubernetes Events on the BE pods moat holds back: one when a lever
 * first holds a pod (MoatHold) and one when it puts a lever back
 * (MoatRelease), from the controller's action history (enforce.h),
 * rate-limited, posted from a thread of their own.  In a pod only, in
 * enforce mode only (shadow and observe write nothing, on the node or
 * in the cluster).
 */
#include "moatd.h"

extern const struct moatd_module events_module;

/* After the actuators: the period's new steps as Events, queued. */
void events_act(struct moatd *d);
/* For reporters: Events posted, dropped by the rate limit or a full queue, failed. */
void events_counts(const struct moatd *d, unsigned long long *posted,
		   unsigned long long *limited, unsigned long long *failed);

#endif /* MOATD_EVENTS_H */
