/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_NODEPATCH_H
#define MOAT_NODEPATCH_H

/*
 * The merge patch that puts moat's taint and hints on its Node, from the
 * Node as the API server sent it (moatd/kube.c's publisher): pure, so
 * that every answer, however odd, is tested and fuzzed without a
 * server.
 */
#include <stdbool.h>
#include <stddef.h>

/* moat's taint on a node whose BE work interferes (PreferNoSchedule). */
#define MOAT_TAINT_KEY	"moat.io/interference"

/**
 * moat_node_patch() - the patch of a Node's taints and moat's annotation.
 * @node: the Node object (GET /api/v1/nodes/NAME), @len bytes of it
 * @taint: moat's taint on the node, or not
 * @hints: the moat.io/hints annotation's value; NULL: withdrawn (null)
 * @out: the patch, a JSON text, malloc()ed
 *
 * Node taints have no merge key: the patch carries the whole list, every
 * taint of the node that is not moat's kept as it is and in its order,
 * moat's at most once, and the node's resourceVersion, so that a change
 * made meanwhile makes the API server refuse it (409) rather than lose.
 *
 * Return: 0; -EINVAL, the reason in @why, where @node is not one JSON
 * object, its spec.taints is not a list (patching would lose taints it
 * does not show) or its resourceVersion is not a string; -ENOMEM.
 */
int moat_node_patch(const char *node, size_t len, bool taint, const char *hints,
		    char **out, char *why, size_t whylen);

#endif /* MOAT_NODEPATCH_H */
