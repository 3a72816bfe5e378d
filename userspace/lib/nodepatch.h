/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_NODEPATCH_H
#define MOAT_NODEPATCH_H

/*
 * The patches that put moat's hints on its Node, from the Node as the
 * API server sent it (moatd/kube.c's publisher): pure, so that every
 * answer, however odd, is tested and fuzzed without a server.
 */
#include <stdbool.h>
#include <stddef.h>

/* moat's taint on a node whose BE work interferes (PreferNoSchedule). */
#define MOAT_TAINT_KEY		"moat.io/interference"
/* moat's condition in the Node's status.conditions */
#define MOAT_CONDITION_TYPE	"MoatInterference"
/* koordinator's per-node load-aware thresholds (apis/extension/load_aware.go) */
#define MOAT_KOORD_KEY		"scheduling.koordinator.sh/usage-thresholds"
/* what moat found there and what it set instead, while it holds it */
#define MOAT_KOORD_FOUND_KEY	"moat.io/usage-thresholds-found"
/* crane-scheduler's Dynamic plugin reads "<value>,<time>" under a key */
#define MOAT_CRANE_KEY		"moat.io/interference-ratio"

/* What moat wants on the Node's metadata and spec. */
struct moat_node_want {
	bool taint;			/* moat's taint, or not */
	const char *hints;		/* moat.io/hints; NULL: withdrawn */
	/*
	 * koordinator's usage-thresholds while moat lowers them; NULL: not
	 * lowered (the value moat found put back, if moat had set one).
	 */
	const char *koord;
	const char *crane;		/* MOAT_CRANE_KEY's value; NULL: withdrawn */
};

/**
 * moat_node_patch() - the merge patch of a Node's taints and annotations.
 * @node: the Node object (GET /api/v1/nodes/NAME), @len bytes of it
 * @w: what moat wants there
 * @out: the patch, a JSON text, malloc()ed
 * @adopted: set when koordinator's annotation was changed by someone
 *	else while moat held it: their value is taken as the one to put
 *	back (and, while moat still lowers it, moat's set again over it)
 *
 * Node taints have no merge key: the patch carries the whole list, every
 * taint of the node that is not moat's kept as it is and in its order,
 * moat's at most once, and the node's resourceVersion, so that a change
 * made meanwhile makes the API server refuse it (409) rather than lose.
 *
 * koordinator's annotation: the first time moat lowers it, the value
 * the node had (or that it had none) and moat's go to
 * MOAT_KOORD_FOUND_KEY in the same patch, so that whichever moatd comes
 * next, after a crash too, puts the node's own value back.
 *
 * Return: 0; -EINVAL, the reason in @why, where @node is not one JSON
 * object, its spec.taints is not a list (patching would lose taints it
 * does not show), its resourceVersion is not a string, or its
 * annotations are not an object of strings; -ENOMEM.
 */
int moat_node_patch(const char *node, size_t len, const struct moat_node_want *w,
		    char **out, bool *adopted, char *why, size_t whylen);

/* moat's Node condition; reason and message as kubectl shows them. */
struct moat_node_condition {
	bool status;			/* "True": some LC pod suffers */
	const char *reason, *message;
};

/* What moat wants on the Node's status. */
struct moat_node_status {
	long long be_cpu_milli, be_memory;	/* -1: not known, left out */
	bool withdraw;				/* all of moat's goes */
	const struct moat_node_condition *cond;	/* NULL: none (deleted
						   where the node has it) */
	const char *now;			/* RFC 3339, UTC */
};

/**
 * moat_node_status_patch() - the strategic merge patch of a Node's status.
 * @node: the Node object, @len bytes of it, for the condition's
 *	lastTransitionTime: kept (left out of the patch) while its status
 *	is the one the node shows, @s->now when it changes
 * @s: what moat wants
 * @out: the patch, a JSON text, malloc()ed
 *
 * The extended resources moat.io/be-cpu and moat.io/be-memory in
 * capacity and allocatable, and moat's element of status.conditions,
 * which the API server merges by its "type" with the kubelet's own;
 * withdrawn: the resources null, the condition a "$patch": "delete" (as
 * it is where no condition is wanted and the node shows moat's).
 *
 * Return: 0; -EINVAL, the reason in @why, where @node is not one JSON
 * object or its status.conditions is not a list; -ENOMEM.
 */
int moat_node_status_patch(const char *node, size_t len, const struct moat_node_status *s,
			   char **out, char *why, size_t whylen);

/**
 * moat_koord_thresholds_check() - whether @val is an annotation value
 * koordinator's load-aware scheduling takes: its CustomUsageThresholds
 * (apis/extension/load_aware.go) as JSON, with usageThresholds set (an
 * empty one makes the scheduler use its own), each threshold a whole
 * percent.  "" (the adapter off) is one.
 *
 * Return: 0; -EINVAL with the reason in @why.
 */
int moat_koord_thresholds_check(const char *val, char *why, size_t whylen);

#endif /* MOAT_NODEPATCH_H */
