// SPDX-License-Identifier: GPL-2.0-only
/*
 * The publisher's patch of its Node (userspace/lib/nodepatch.c): the
 * node's own taints kept, moat's once or not at all, the annotation set
 * or withdrawn, the resourceVersion carried; a Node that is not one
 * refused with the reason.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>
#include "nodepatch.h"

#define NODE(taints)							\
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"node-1\","	\
	"\"resourceVersion\":\"48213\"},\"spec\":{\"taints\":" taints "}}"
#define OTHERS	"{\"key\":\"a\",\"effect\":\"NoSchedule\"},"			\
		"{\"key\":\"b\",\"value\":\"x\",\"effect\":\"NoExecute\"}"
#define MINE	"{\"key\":\"" MOAT_TAINT_KEY "\",\"value\":\"true\",\"effect\":\"PreferNoSchedule\"}"

static char why[128];

static char *patch(const char *node, bool taint, const char *hints)
{
	char *out = NULL;

	cr_assert_eq(moat_node_patch(node, strlen(node), taint, hints, &out, why,
				     sizeof(why)), 0, "%s: %s", node, why);
	return out;
}

Test(nodepatch, the_nodes_taints_kept_in_order_and_moats_once)
{
	char *p = patch(NODE("[" OTHERS "," MINE "]"), true, "{\"v\":1}");

	cr_expect_str_eq(p, "{\"metadata\":{\"annotations\":{\"moat.io/hints\":\"{\\\"v\\\":1}\"},"
			 "\"resourceVersion\":\"48213\"},\"spec\":{\"taints\":[" OTHERS ","
			 MINE "]}}");
	free(p);
	/* moat's first in the node's list: still once, last */
	p = patch(NODE("[" MINE "," OTHERS "]"), true, "{}");
	cr_expect(strstr(p, "[" OTHERS "," MINE "]"), "%s", p);
	free(p);
	/* off: moat's goes, the others stay; no hints: the annotation null */
	p = patch(NODE("[" OTHERS "," MINE "]"), false, NULL);
	cr_expect_str_eq(p, "{\"metadata\":{\"annotations\":{\"moat.io/hints\":null},"
			 "\"resourceVersion\":\"48213\"},\"spec\":{\"taints\":[" OTHERS "]}}");
	free(p);
	/* no taints, or null: moat's alone */
	p = patch("{\"metadata\":{\"resourceVersion\":\"1\"},\"spec\":{}}", true, NULL);
	cr_expect(strstr(p, "\"taints\":[" MINE "]"), "%s", p);
	free(p);
	p = patch(NODE("null"), false, NULL);
	cr_expect(strstr(p, "\"taints\":[]"), "%s", p);
	free(p);
}

/* A taint whose key is no string, or no object: not moat's, kept. */
Test(nodepatch, odd_taints_are_not_moats)
{
	char *p = patch(NODE("[1,{\"key\":5},{\"value\":\"" MOAT_TAINT_KEY "\"}]"), false, NULL);

	cr_expect(strstr(p, "\"taints\":[1,{\"key\":5},{\"value\":\"" MOAT_TAINT_KEY "\"}]"),
		  "%s", p);
	free(p);
}

/* What patching would lose or the API server could not have sent: refused. */
Test(nodepatch, a_node_that_is_not_one_is_refused_with_the_reason)
{
	static const char *const bad[] = {
		"", "null", "[]", "not JSON", "{\"spec\":{\"taints\":{}}}",
		"{\"spec\":{\"taints\":\"a\"}}", "{\"spec\":5}",
		"{\"metadata\":{\"resourceVersion\":7},\"spec\":{}}",
		"{\"spec\":{}} trailing",
	};
	static const char nul[] = "{\"spec\":{}}\0{\"spec\":1}";
	size_t i;
	char *out = (char *)1;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(moat_node_patch(bad[i], strlen(bad[i]), true, NULL, &out, why,
					     sizeof(why)), -EINVAL, "taken: %s", bad[i]);
		cr_expect_null(out);
		cr_expect_neq(why[0], '\0', "no reason for %s", bad[i]);
	}
	/* a NUL inside: what follows it is part of the answer, not its end */
	cr_expect_eq(moat_node_patch(nul, sizeof(nul) - 1, true, NULL, &out, why, sizeof(why)),
		     -EINVAL, "an answer with a NUL in it taken");
}
