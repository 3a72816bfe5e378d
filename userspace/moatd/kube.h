/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOATD_KUBE_H
#define MOATD_KUBE_H

/*
 * The kube module: the Node publisher, a reporter.  With kube/publish on
 * and in a pod, the committed hints go to the Node object, from a thread
 * of their own.
 */
#include "moatd.h"

extern const struct moatd_module kube_module;

/* Hand the period's hints on when they say something new. */
void kube_publish(struct moatd *d);
/* Node updates made, or failed requests (@errors). */
unsigned long long kube_counter(const struct moatd *d, bool errors);
/* When the Node was last updated (Unix time, s); 0: not yet. */
double kube_updated_s(const struct moatd *d);
/* Whether the publisher runs (kube/publish on, in a pod). */
bool kube_publishing(const struct moatd *d);

#endif /* MOATD_KUBE_H */
