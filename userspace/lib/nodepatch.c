// SPDX-License-Identifier: GPL-2.0-only
/* moat's taint and annotation on its Node, as a merge patch (nodepatch.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "nodepatch.h"

/* Deeper than any Node: a body nested past it is not one. */
#define JSON_DEPTH	64

/* @text, all of it, as one JSON value (nothing after it but space). */
static json_object *parse(const char *text, size_t len)
{
	struct json_tokener *tok = json_tokener_new_ex(JSON_DEPTH);
	json_object *o;
	size_t end;

	if (!tok)
		return NULL;
	o = json_tokener_parse_ex(tok, text, (int)len);
	if (o && json_tokener_get_error(tok) == json_tokener_success) {
		for (end = json_tokener_get_parse_end(tok);
		     end < len && strchr(" \t\r\n", text[end]) && text[end]; end++)
			;
		if (end != len) {
			json_object_put(o);
			o = NULL;
		}
	} else if (o) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	return o;
}

/* Whether taint @e is moat's: an object whose key is moat's, a string. */
static bool moats(json_object *e)
{
	json_object *key;

	return json_object_is_type(e, json_type_object) &&
	       json_object_object_get_ex(e, "key", &key) &&
	       json_object_is_type(key, json_type_string) &&
	       !strcmp(json_object_get_string(key), MOAT_TAINT_KEY);
}

static int build(json_object *node, bool taint, const char *hints, char **out,
		 char *why, size_t whylen)
{
	json_object *spec = NULL, *taints = NULL, *meta = NULL, *rv = NULL;
	json_object *patch, *pm, *ps, *ann, *keep, *t;
	const char *text;
	size_t i;
	int err = -ENOMEM;

	if (json_object_object_get_ex(node, "spec", &spec) && spec &&
	    !json_object_is_type(spec, json_type_object)) {
		snprintf(why, whylen, "spec is not an object");
		return -EINVAL;
	}
	if (spec && json_object_object_get_ex(spec, "taints", &taints) && taints &&
	    !json_object_is_type(taints, json_type_array)) {
		snprintf(why, whylen, "spec.taints is not a list");
		return -EINVAL;
	}
	if (json_object_object_get_ex(node, "metadata", &meta) && meta &&
	    json_object_is_type(meta, json_type_object) &&
	    json_object_object_get_ex(meta, "resourceVersion", &rv) && rv &&
	    !json_object_is_type(rv, json_type_string)) {
		snprintf(why, whylen, "metadata.resourceVersion is not a string");
		return -EINVAL;
	}
	patch = json_object_new_object();
	pm = json_object_new_object();
	ps = json_object_new_object();
	ann = json_object_new_object();
	keep = json_object_new_array();
	if (!patch || !pm || !ps || !ann || !keep) {
		json_object_put(patch);
		json_object_put(pm);
		json_object_put(ps);
		json_object_put(ann);
		json_object_put(keep);
		return -ENOMEM;
	}
	/* from here each is held by the patch, and goes with it */
	json_object_object_add(patch, "metadata", pm);
	json_object_object_add(patch, "spec", ps);
	json_object_object_add(pm, "annotations", ann);
	json_object_object_add(ps, "taints", keep);
	for (i = 0; taints && i < json_object_array_length(taints); i++) {
		json_object *e = json_object_array_get_idx(taints, i);

		if (!moats(e) && json_object_array_add(keep, json_object_get(e)))
			goto out;
	}
	if (taint) {
		t = json_object_new_object();
		if (!t || json_object_array_add(keep, t)) {
			json_object_put(t);
			goto out;
		}
		json_object_object_add(t, "key", json_object_new_string(MOAT_TAINT_KEY));
		json_object_object_add(t, "value", json_object_new_string("true"));
		json_object_object_add(t, "effect", json_object_new_string("PreferNoSchedule"));
	}
	if (rv)
		json_object_object_add(pm, "resourceVersion", json_object_get(rv));
	/* no hints: the annotation withdrawn (null, in a merge patch) */
	json_object_object_add(ann, "moat.io/hints",
			       hints ? json_object_new_string(hints) : NULL);
	text = json_object_to_json_string_ext(patch, JSON_C_TO_STRING_PLAIN |
						     JSON_C_TO_STRING_NOSLASHESCAPE);
	*out = text ? strdup(text) : NULL;
	err = *out ? 0 : -ENOMEM;
out:
	json_object_put(patch);
	return err;
}

int moat_node_patch(const char *node, size_t len, bool taint, const char *hints,
		    char **out, char *why, size_t whylen)
{
	json_object *o;
	int err;

	*out = NULL;
	why[0] = '\0';
	o = parse(node, len);
	if (!json_object_is_type(o, json_type_object)) {
		snprintf(why, whylen, "not a JSON object");
		json_object_put(o);
		return -EINVAL;
	}
	err = build(o, taint, hints, out, why, whylen);
	json_object_put(o);
	return err;
}
