// SPDX-License-Identifier: GPL-2.0-only
/*
 * The Node the API server sends back to the publisher (or whoever
 * answers at its address): moat's patch of it keeps every taint that is
 * not moat's, in order, has moat's at most once, and is one JSON object.
 */
#include <json-c/json.h>
#include "fuzz.h"
#include "nodepatch.h"

static bool moats(json_object *e)
{
	json_object *key;

	return json_object_is_type(e, json_type_object) &&
	       json_object_object_get_ex(e, "key", &key) &&
	       json_object_is_type(key, json_type_string) &&
	       !strcmp(json_object_get_string(key), MOAT_TAINT_KEY);
}

static void check(const char *in, size_t size, bool taint, const char *hints,
		  const char *koord)
{
	struct moat_node_want w = { .taint = taint, .hints = hints, .koord = koord };
	json_object *node, *patch, *spec, *taints, *kept, *meta, *ann, *h;
	char why[128], *out;
	size_t i, n = 0, k = 0, mine = 0;
	bool adopted;

	if (moat_node_patch(in, size, &w, &out, &adopted, why, sizeof(why))) {
		fuzz_check(why[0]);
		return;
	}
	patch = json_tokener_parse(out);
	fuzz_check(json_object_is_type(patch, json_type_object));
	fuzz_check(json_object_object_get_ex(patch, "spec", &spec));
	fuzz_check(json_object_object_get_ex(spec, "taints", &kept));
	fuzz_check(json_object_is_type(kept, json_type_array));
	fuzz_check(json_object_object_get_ex(patch, "metadata", &meta));
	fuzz_check(json_object_object_get_ex(meta, "annotations", &ann));
	fuzz_check(json_object_object_get_ex(ann, "moat.io/hints", &h));
	fuzz_check(hints ? !strcmp(json_object_get_string(h), hints) : !h);
	/* koordinator's: moat's value while lowered, and a record beside it */
	if (koord && json_object_object_get_ex(ann, MOAT_KOORD_KEY, &h))
		fuzz_check(!strcmp(json_object_get_string(h), koord) &&
			   json_object_object_get_ex(ann, MOAT_KOORD_FOUND_KEY, &h) && h);
	/* the node's own taints, every one in its order, then moat's */
	node = json_tokener_parse(in);
	taints = NULL;
	if (json_object_object_get_ex(node, "spec", &spec) && spec)
		json_object_object_get_ex(spec, "taints", &taints);
	for (i = 0; i < json_object_array_length(kept); i++)
		mine += moats(json_object_array_get_idx(kept, i));
	fuzz_check(mine == (taint ? 1 : 0));
	for (i = 0; taints && i < json_object_array_length(taints); i++) {
		json_object *e = json_object_array_get_idx(taints, i);

		if (moats(e))
			continue;
		n++;
		fuzz_check(k < json_object_array_length(kept));
		/* as text: json-c takes NaN, which json_object_equal() never is */
		fuzz_check(!strcmp(json_object_to_json_string(e),
				   json_object_to_json_string(json_object_array_get_idx(kept, k))));
		k++;
	}
	fuzz_check(json_object_array_length(kept) == n + mine);
	json_object_put(node);
	json_object_put(patch);
	free(out);
}

/* The status patch: one JSON object with a status, or refused with a reason. */
static void status(const char *in, size_t size, bool withdraw)
{
	struct moat_node_condition c = { .status = true, .reason = "R", .message = "m" };
	struct moat_node_status s = { .be_cpu_milli = 1, .be_memory = 2, .withdraw = withdraw,
				      .cond = &c, .now = "2026-12-06T00:00:00Z" };
	json_object *patch, *st;
	char why[128], *out;

	if (moat_node_status_patch(in, size, &s, &out, why, sizeof(why))) {
		fuzz_check(why[0]);
		return;
	}
	patch = json_tokener_parse(out);
	fuzz_check(json_object_object_get_ex(patch, "status", &st) &&
		   json_object_object_get_ex(st, "conditions", &st) &&
		   json_object_array_length(st) == 1);
	json_object_put(patch);
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_string(data, size, 1 << 20);

	if (!s)
		return 0;
	/* what parses as a whole, as moat's parser takes it */
	check(s, size, true, "{\"v\":1}", "{\"usageThresholds\":{\"cpu\":40}}");
	check(s, size, false, NULL, NULL);
	status(s, size, true);
	status(s, size, false);
	free(s);
	return 0;
}
