/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOATD_PODS_H
#define MOATD_PODS_H

/*
 * The pods module: a source.  With kube/pods on and in a pod, a thread
 * lists and watches the node's pods on the API server; each period the
 * loop takes what it learned into the groups (namespace, name, label,
 * priority class) and classes them again.  The loop never waits on the
 * network.
 */
#include "moatd.h"

extern const struct moatd_module pods_module;

/* The period's pod metadata into the groups; their classes again if it moved. */
void pods_update(struct moatd *d);

struct pods_status {
	bool watching;		/* the thread runs */
	bool synced;		/* in step with the API server */
	double sync_age_s;	/* since the last sync; NAN: never */
	size_t known;		/* pods it has metadata of */
	unsigned long long errors, relists;
};

void pods_status(const struct moatd *d, struct pods_status *s);

#endif /* MOATD_PODS_H */
