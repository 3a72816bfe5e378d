// SPDX-License-Identifier: GPL-2.0-only
/*
 * The publisher's patch of its Node (userspace/lib/nodepatch.c): the
 * node's own taints kept, moat's once or not at all, the annotation set
 * or withdrawn, the resourceVersion carried; a Node that is not one
 * refused with the reason.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <criterion/criterion.h>
#include <json-c/json.h>
#include "nodepatch.h"

#define NODE(taints)							\
	"{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"node-1\","	\
	"\"resourceVersion\":\"48213\"},\"spec\":{\"taints\":" taints "}}"
#define OTHERS	"{\"key\":\"a\",\"effect\":\"NoSchedule\"},"			\
		"{\"key\":\"b\",\"value\":\"x\",\"effect\":\"NoExecute\"}"
#define MINE	"{\"key\":\"" MOAT_TAINT_KEY "\",\"value\":\"true\",\"effect\":\"PreferNoSchedule\"}"

static char why[128];

static char *want(const char *node, const struct moat_node_want *w, bool *adopted)
{
	char *out = NULL;

	cr_assert_eq(moat_node_patch(node, strlen(node), w, &out, adopted, why,
				     sizeof(why)), 0, "%s: %s", node, why);
	return out;
}

static char *patch(const char *node, bool taint, const char *hints)
{
	struct moat_node_want w = { .taint = taint, .hints = hints };
	bool adopted;

	return want(node, &w, &adopted);
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
		"{\"metadata\":{\"annotations\":[]}}",
		"{\"metadata\":{\"annotations\":{\"" MOAT_KOORD_KEY "\":5}}}",
		"{\"metadata\":{\"annotations\":{\"" MOAT_KOORD_FOUND_KEY "\":{}}}}",
	};
	static const char nul[] = "{\"spec\":{}}\0{\"spec\":1}";
	struct moat_node_want w = { .taint = true };
	size_t i;
	char *out = (char *)1;
	bool adopted;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(moat_node_patch(bad[i], strlen(bad[i]), &w, &out, &adopted, why,
					     sizeof(why)), -EINVAL, "taken: %s", bad[i]);
		cr_expect_null(out);
		cr_expect_neq(why[0], '\0', "no reason for %s", bad[i]);
	}
	/* a NUL inside: what follows it is part of the answer, not its end */
	cr_expect_eq(moat_node_patch(nul, sizeof(nul) - 1, &w, &out, &adopted, why, sizeof(why)),
		     -EINVAL, "an answer with a NUL in it taken");
}

/* moat's record of koordinator's annotation: what it found and set. */
static char *record(const char *found, const char *set)
{
	json_object *r = json_object_new_object();
	char *s;

	json_object_object_add(r, "found", found ? json_object_new_string(found) : NULL);
	json_object_object_add(r, "set", json_object_new_string(set));
	s = strdup(json_object_to_json_string_ext(r, JSON_C_TO_STRING_PLAIN |
						     JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(r);
	return s;
}

/* A node with koordinator's annotation @cur and moat's record @rec (NULL: none). */
static char *koord_node(const char *cur, const char *rec)
{
	json_object *n = json_object_new_object(), *m = json_object_new_object();
	json_object *a = json_object_new_object();
	char *s;

	json_object_object_add(n, "metadata", m);
	json_object_object_add(m, "resourceVersion", json_object_new_string("9"));
	json_object_object_add(m, "annotations", a);
	json_object_object_add(a, "other.io/a", json_object_new_string("x"));
	if (cur)
		json_object_object_add(a, MOAT_KOORD_KEY, json_object_new_string(cur));
	if (rec)
		json_object_object_add(a, MOAT_KOORD_FOUND_KEY, json_object_new_string(rec));
	s = strdup(json_object_to_json_string(n));
	json_object_put(n);
	return s;
}

/*
 * What the patch @p does to annotation @key: "absent" (left as it is),
 * "null" (removed) or its value, in @buf.
 */
static const char *did(const char *p, const char *key, char *buf, size_t len)
{
	json_object *o = json_tokener_parse(p), *m, *a, *v;

	cr_assert(json_object_object_get_ex(o, "metadata", &m) &&
		  json_object_object_get_ex(m, "annotations", &a), "%s", p);
	if (!json_object_object_get_ex(a, key, &v))
		snprintf(buf, len, "absent");
	else
		snprintf(buf, len, "%s", v ? json_object_get_string(v) : "null");
	json_object_put(o);
	return buf;
}

#define OURS	"{\"usageThresholds\":{\"cpu\":40,\"memory\":95}}"
#define OLD	"{\"usageThresholds\":{\"cpu\":65}}"
#define NONE	"\1"	/* a record of "there was none" */

/*
 * koordinator's annotation: lowered with what was there kept beside it,
 * put back when no longer lowered; a value someone else set meanwhile
 * is taken as the node's own, never fought.
 */
Test(nodepatch, koordinators_thresholds_are_put_back_as_found)
{
	static const struct {
		const char *cur;		/* the node's value */
		const char *found, *set;	/* moat's record; set NULL: none */
		const char *want;
		const char *k;			/* what the patch does to it */
		const char *m_found, *m_set;	/* and to the record: "absent",
						   "null", or this record */
		bool adopted;
	} c[] = {
		/* lowered: the value found, or that there was none, recorded */
		{ OLD, NULL, NULL, OURS, OURS, OLD, OURS, false },
		{ NULL, NULL, NULL, OURS, OURS, NONE, OURS, false },
		/* held as it is: nothing sent */
		{ OURS, OLD, OURS, OURS, "absent", "absent", NULL, false },
		/* released: back as found, the record gone */
		{ OURS, OLD, OURS, NULL, OLD, "null", NULL, false },
		{ OURS, NONE, OURS, NULL, "null", "null", NULL, false },
		/* the knob changed while held: moat's new value, the same found */
		{ "v1", OLD, "v1", OURS, OURS, OLD, OURS, false },
		/* someone else's meanwhile: theirs is the node's own now */
		{ "theirs", OLD, OURS, OURS, OURS, "theirs", OURS, true },
		{ "theirs", OLD, OURS, NULL, "absent", "null", NULL, true },
		{ NULL, OLD, OURS, NULL, "absent", "null", NULL, true },
		/* never lowered: nothing touched; a record moat cannot read goes */
		{ OLD, NULL, NULL, NULL, "absent", "absent", NULL, false },
		{ OLD, "not json", NULL, NULL, "absent", "null", NULL, false },
	};
	char kb[512], mb[512];
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct moat_node_want w = { .koord = c[i].want };
		char *rec = !c[i].found ? NULL : !c[i].set ? strdup(c[i].found) :
			    record(strcmp(c[i].found, NONE) ? c[i].found : NULL, c[i].set);
		char *node = koord_node(c[i].cur, rec), *p, *m;
		bool adopted = !c[i].adopted;

		p = want(node, &w, &adopted);
		cr_expect_str_eq(did(p, MOAT_KOORD_KEY, kb, sizeof(kb)), c[i].k, "case %zu: %s", i, p);
		m = c[i].m_set ? record(strcmp(c[i].m_found, NONE) ? c[i].m_found : NULL,
					c[i].m_set) : strdup(c[i].m_found);
		cr_expect_str_eq(did(p, MOAT_KOORD_FOUND_KEY, mb, sizeof(mb)), m,
				 "case %zu: %s", i, p);
		cr_expect_eq(adopted, c[i].adopted, "case %zu: adopted %d", i, adopted);
		/* never anyone else's annotation */
		cr_expect_str_eq(did(p, "other.io/a", kb, sizeof(kb)), "absent", "case %zu", i);
		free(m);
		free(p);
		free(node);
		free(rec);
	}
}

Test(nodepatch, cranes_value_is_set_and_withdrawn)
{
	struct moat_node_want w = { .crane = "0.2500,2026-12-06T21:00:00Z" };
	char *node = koord_node(NULL, NULL), *p;
	char buf[64];
	bool adopted;

	p = want(node, &w, &adopted);
	cr_expect_str_eq(did(p, MOAT_CRANE_KEY, buf, sizeof(buf)), w.crane);
	free(p);
	free(node);
	/* off: removed where the node has it, else left out */
	node = koord_node(NULL, NULL);
	w.crane = NULL;
	p = want(node, &w, &adopted);
	cr_expect_str_eq(did(p, MOAT_CRANE_KEY, buf, sizeof(buf)), "absent");
	free(p);
	free(node);
	node = strdup("{\"metadata\":{\"annotations\":{\"" MOAT_CRANE_KEY "\":\"0.1,x\"}}}");
	p = want(node, &w, &adopted);
	cr_expect_str_eq(did(p, MOAT_CRANE_KEY, buf, sizeof(buf)), "null");
	free(p);
	free(node);
}

/* moat's element of the status patch's conditions, parsed; NULL: none. */
static json_object *cond_of(json_object *p)
{
	json_object *st, *cs;

	cr_assert(json_object_object_get_ex(p, "status", &st));
	if (!json_object_object_get_ex(st, "conditions", &cs))
		return NULL;
	cr_assert_eq(json_object_array_length(cs), 1);
	return json_object_array_get_idx(cs, 0);
}

static const char *field(json_object *o, const char *key)
{
	json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
}

static json_object *status_patch(const char *node, const struct moat_node_status *s)
{
	json_object *o;
	char *out;

	cr_assert_eq(moat_node_status_patch(node, strlen(node), s, &out, why, sizeof(why)), 0,
		     "%s: %s", node, why);
	o = json_tokener_parse(out);
	cr_assert_not_null(o, "%s", out);
	free(out);
	return o;
}

#define SHOWING(status)								\
	"{\"status\":{\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},"	\
	"{\"type\":\"" MOAT_CONDITION_TYPE "\",\"status\":\"" status "\","		\
	"\"lastTransitionTime\":\"2026-12-01T00:00:00Z\"}]}}"

/*
 * The condition as a NodeCondition (core/v1): a status of True or False,
 * a CamelCase reason, a message, lastHeartbeatTime each update and
 * lastTransitionTime only when its status changes.
 */
Test(nodepatch, the_condition_changes_its_transition_time_only_on_change)
{
	static const struct { const char *node; bool status, transition; } c[] = {
		{ "{}", true, true },
		{ "{\"status\":{\"conditions\":null}}", false, true },
		{ SHOWING("True"), true, false },
		{ SHOWING("False"), true, true },
		{ SHOWING("False"), false, false },
		{ SHOWING("Unknown"), false, true },
	};
	struct moat_node_condition cond = { .reason = "LCRunQueueWait", .message = "m" };
	struct moat_node_status s = { .be_cpu_milli = 1500, .be_memory = 1 << 30, .cond = &cond,
				      .now = "2026-12-06T12:00:00Z" };
	size_t i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		json_object *p, *e;

		cond.status = c[i].status;
		p = status_patch(c[i].node, &s);
		e = cond_of(p);
		cr_assert_not_null(e, "case %zu", i);
		cr_expect_str_eq(field(e, "type"), MOAT_CONDITION_TYPE);
		cr_expect_str_eq(field(e, "status"), c[i].status ? "True" : "False", "case %zu", i);
		cr_expect_str_eq(field(e, "reason"), "LCRunQueueWait");
		cr_expect_str_eq(field(e, "message"), "m");
		cr_expect_str_eq(field(e, "lastHeartbeatTime"), s.now);
		if (c[i].transition)
			cr_expect_str_eq(field(e, "lastTransitionTime"), s.now, "case %zu", i);
		else
			cr_expect_null(field(e, "lastTransitionTime"), "case %zu", i);
		json_object_put(p);
	}
}

Test(nodepatch, the_status_patch_withdraws_all_of_moats)
{
#define BAD	"{\"status\":{\"conditions\":{}}}"
	struct moat_node_status s = { .be_cpu_milli = -1, .be_memory = -1, .withdraw = true,
				      .now = "2026-12-06T12:00:00Z" };
	json_object *p = status_patch(SHOWING("True"), &s), *e;
	char *out;

	e = cond_of(p);
	cr_expect_str_eq(field(e, "$patch"), "delete");
	cr_expect_str_eq(field(e, "type"), MOAT_CONDITION_TYPE);
	json_object_put(p);
	cr_assert_eq(moat_node_status_patch("{}", 2, &s, &out, why, sizeof(why)), 0);
	cr_expect(strstr(out, "\"capacity\":{\"moat.io/be-cpu\":null,\"moat.io/be-memory\":null}"),
		  "%s", out);
	free(out);
	/* capacity not known yet, no condition: neither sent */
	s.withdraw = false;
	cr_assert_eq(moat_node_status_patch("{}", 2, &s, &out, why, sizeof(why)), 0);
	cr_expect_str_eq(out, "{\"status\":{}}");
	free(out);
	/* no condition wanted (kube/condition 0) where the node shows moat's: it goes */
	p = status_patch(SHOWING("True"), &s);
	e = cond_of(p);
	cr_expect(e && !strcmp(field(e, "$patch"), "delete"), "moat's condition left on");
	json_object_put(p);
	cr_expect_eq(moat_node_status_patch(BAD, strlen(BAD), &s, &out, why, sizeof(why)),
		     -EINVAL);
	cr_expect_str_eq(why, "status.conditions is not a list");
}

/* koordinator's documented CustomUsageThresholds taken; what it is not, refused. */
Test(nodepatch, koordinators_thresholds_are_checked_against_its_type)
{
	static const char *const good[] = {
		"",
		"{\"usageThresholds\":{\"cpu\":65}}",
		"{\"usageThresholds\":{\"cpu\":65,\"memory\":95},\"prodUsageThresholds\":{\"cpu\":55},"
		"\"aggregatedUsage\":{\"usageThresholds\":{\"cpu\":65},\"usageAggregationType\":\"p95\","
		"\"usageAggregatedDuration\":\"5m\"}}",
	};
	static const char *const bad[] = {
		"{}", "[]", "65", "{\"usageThresholds\":{}}",
		"{\"usageThresholds\":{\"cpu\":\"65\"}}", "{\"usageThresholds\":{\"cpu\":101}}",
		"{\"usageThresholds\":{\"cpu\":65.5}}", "{\"usageThresholds\":{\"cpu\":-1}}",
		"{\"usageThreshold\":{\"cpu\":1}}",
		"{\"usageThresholds\":{\"cpu\":65},\"aggregatedUsage\":{\"usageAggregationType\":\"p42\"}}",
		"{\"usageThresholds\":{\"cpu\":65},\"aggregatedUsage\":{\"x\":1}}",
		"{\"usageThresholds\":{\"cpu\":65}} x",
	};
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		cr_expect_eq(moat_koord_thresholds_check(good[i], why, sizeof(why)), 0,
			     "%s refused: %s", good[i], why);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why[0] = '\0';
		cr_expect_eq(moat_koord_thresholds_check(bad[i], why, sizeof(why)), -EINVAL,
			     "%s taken", bad[i]);
		cr_expect_neq(why[0], '\0', "no reason for %s", bad[i]);
	}
}
