/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOATD_WEIGHTS_H
#define MOATD_WEIGHTS_H

/*
 * The weight lever: what the enforce module does to a BE pod's CPU
 * weight (Documentation/enforce.rst, "On Kubernetes' pods").  The
 * pod-level cgroup's cpu.weight (v2) or cpu.shares (v1) only: kubelet
 * writes it when it makes the pod's cgroup, on an in-place resize and
 * when it kills the pod, never in between, while the QoS tiers it
 * rewrites every minute and a container's weight the runtime re-applies
 * on every update, so moat writes neither.  Nor cpu.idle: once it is set
 * the kernel refuses the weight writes kubelet makes (koordinator issue
 * 2732).
 *
 * Every BE pod is held to one factor of its own weight, so two batch
 * pods keep the ratio of their requests; the least factor is the one
 * that puts the least-weighted of them at the kernel's minimum (v2 1,
 * v1 2 shares), under which the ratio could not be kept.  A pod at the
 * minimum already (a besteffort pod's 2 shares) stays there.  Every
 * write goes through the journal.
 */
#include "moatd.h"

/* A BE pod's weight, as the period found it (the enforce module's). */
struct pod_weight {
	double orig;		/* its weight (v2's scale) before moat; NAN: none */
	double floor;		/* weights_floor() of it */
	bool ok;		/* moat may scale it this period */
	int err;		/* the last write's -errno, said once */
};

/*
 * The source: @unit's weight now, and its original: the journal's where
 * moat holds the file, else what it holds.  @w->ok where the file is
 * there, readable and writable.
 */
void weights_read(const struct moatd *d, const struct moatd_group *unit,
		  struct pod_weight *w);

/*
 * The least factor that still moves one pod's weight of @orig: the
 * kernel's minimum over it; 1 for a pod at the minimum already, which
 * no factor moves.
 */
double weights_floor(const struct moatd *d, double orig);

/*
 * The actuator: @unit's weight at @w->orig * @factor, the kernel's
 * minimum at least; @factor 1 or more (or INFINITY) puts its original
 * back.  Return: 0 or the write's -errno, also in @w->err.
 */
int weights_apply(struct moatd *d, struct moatd_group *unit,
		  struct pod_weight *w, double factor);

/* The weight @w's pod has at @factor, in v2's scale (what metrics show). */
double weights_at(const struct moatd *d, const struct pod_weight *w, double factor);

#endif /* MOATD_WEIGHTS_H */
