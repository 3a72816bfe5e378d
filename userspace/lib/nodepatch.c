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

/* @o's member @key, NULL where @o is no object or has none (or null). */
static json_object *member(json_object *o, const char *key)
{
	json_object *v = NULL;

	if (!json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, key, &v))
		return NULL;
	return v;
}

/* Whether taint @e is moat's: an object whose key is moat's, a string. */
static bool moats(json_object *e)
{
	json_object *key = member(e, "key");

	return json_object_is_type(key, json_type_string) &&
	       !strcmp(json_object_get_string(key), MOAT_TAINT_KEY);
}

static const char *text_of(json_object *o)
{
	return json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
						 JSON_C_TO_STRING_NOSLASHESCAPE);
}

/* The record of what moat found and set: {"found": F or null, "set": S}. */
static json_object *koord_record(const char *found, const char *set)
{
	json_object *r = json_object_new_object();

	if (!r)
		return NULL;
	json_object_object_add(r, "found", found ? json_object_new_string(found) : NULL);
	json_object_object_add(r, "set", json_object_new_string(set));
	return r;
}

/* Whether @r is a record moat wrote: what it found (NULL: none), and set. */
static bool koord_held(json_object *r, const char **found, const char **set)
{
	json_object *f, *s = member(r, "set");

	if (!json_object_is_type(s, json_type_string) ||
	    !json_object_object_get_ex(r, "found", &f) ||
	    (f && !json_object_is_type(f, json_type_string)))
		return false;
	*found = f ? json_object_get_string(f) : NULL;
	*set = json_object_get_string(s);
	return true;
}

/*
 * koordinator's annotation, into @ann (the patch's annotations), from the
 * node's value @cur and moat's record @rec (each NULL where absent).
 */
static int koord(json_object *ann, const char *cur, const char *rec, const char *want,
		 bool *adopted)
{
	json_object *r = rec ? json_tokener_parse(rec) : NULL, *nr = NULL;
	const char *found = NULL, *set = NULL;
	bool held = koord_held(r, &found, &set);
	bool ours = held && cur && !strcmp(cur, set);
	int err = 0;

	if (held && !ours)
		*adopted = true;	/* theirs is the node's own now */
	if (want) {
		if (ours && !strcmp(want, set))
			goto out;	/* as it is */
		nr = koord_record(ours ? found : cur, want);
		if (!nr) {
			err = -ENOMEM;
			goto out;
		}
		json_object_object_add(ann, MOAT_KOORD_KEY, json_object_new_string(want));
		json_object_object_add(ann, MOAT_KOORD_FOUND_KEY,
				       json_object_new_string(text_of(nr)));
	} else if (rec) {
		/* back as moat found it (none: removed), unless changed since */
		if (ours)
			json_object_object_add(ann, MOAT_KOORD_KEY,
					       found ? json_object_new_string(found) : NULL);
		json_object_object_add(ann, MOAT_KOORD_FOUND_KEY, NULL);
	}
out:
	json_object_put(nr);
	json_object_put(r);
	return err;
}

/* Annotation @key of the node's @ann: its text, NULL where none; -EINVAL. */
static int annotation(json_object *ann, const char *key, const char **val, char *why,
		      size_t whylen)
{
	json_object *v = member(ann, key);

	*val = NULL;
	if (!v)
		return 0;
	if (!json_object_is_type(v, json_type_string)) {
		snprintf(why, whylen, "annotation %s is not a string", key);
		return -EINVAL;
	}
	*val = json_object_get_string(v);
	return 0;
}

static int build(json_object *node, const struct moat_node_want *w, char **out,
		 bool *adopted, char *why, size_t whylen)
{
	json_object *spec = member(node, "spec"), *taints = member(spec, "taints");
	json_object *meta = member(node, "metadata"), *rv = member(meta, "resourceVersion");
	json_object *nann = member(meta, "annotations");
	json_object *patch, *pm, *ps, *ann, *keep, *t;
	const char *cur, *rec;
	size_t i;
	int err = -ENOMEM;

	if (spec && !json_object_is_type(spec, json_type_object)) {
		snprintf(why, whylen, "spec is not an object");
		return -EINVAL;
	}
	if (taints && !json_object_is_type(taints, json_type_array)) {
		snprintf(why, whylen, "spec.taints is not a list");
		return -EINVAL;
	}
	if (rv && !json_object_is_type(rv, json_type_string)) {
		snprintf(why, whylen, "metadata.resourceVersion is not a string");
		return -EINVAL;
	}
	if (nann && !json_object_is_type(nann, json_type_object)) {
		snprintf(why, whylen, "metadata.annotations is not an object");
		return -EINVAL;
	}
	if (annotation(nann, MOAT_KOORD_KEY, &cur, why, whylen) ||
	    annotation(nann, MOAT_KOORD_FOUND_KEY, &rec, why, whylen))
		return -EINVAL;
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
	if (w->taint) {
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
			       w->hints ? json_object_new_string(w->hints) : NULL);
	if (w->crane)
		json_object_object_add(ann, MOAT_CRANE_KEY, json_object_new_string(w->crane));
	else if (member(nann, MOAT_CRANE_KEY))
		json_object_object_add(ann, MOAT_CRANE_KEY, NULL);
	if (koord(ann, cur, rec, w->koord, adopted))
		goto out;
	*out = strdup(text_of(patch));
	err = *out ? 0 : -ENOMEM;
out:
	json_object_put(patch);
	return err;
}

/* @node as one JSON object, or -EINVAL with the reason. */
static int parse_node(const char *node, size_t len, json_object **o, char *why,
		      size_t whylen)
{
	*o = parse(node, len);
	if (json_object_is_type(*o, json_type_object))
		return 0;
	snprintf(why, whylen, "not a JSON object");
	json_object_put(*o);
	*o = NULL;
	return -EINVAL;
}

int moat_node_patch(const char *node, size_t len, const struct moat_node_want *w,
		    char **out, bool *adopted, char *why, size_t whylen)
{
	json_object *o;
	int err;

	*out = NULL;
	*adopted = false;
	why[0] = '\0';
	err = parse_node(node, len, &o, why, whylen);
	if (!err)
		err = build(o, w, out, adopted, why, whylen);
	json_object_put(o);
	return err;
}

/* The status moat's condition shows on @node now, NULL: none. */
static int shown(json_object *node, const char **status, char *why, size_t whylen)
{
	json_object *st = member(node, "status"), *conds = member(st, "conditions");
	size_t i;

	*status = NULL;
	if (st && !json_object_is_type(st, json_type_object)) {
		snprintf(why, whylen, "status is not an object");
		return -EINVAL;
	}
	if (conds && !json_object_is_type(conds, json_type_array)) {
		snprintf(why, whylen, "status.conditions is not a list");
		return -EINVAL;
	}
	for (i = 0; conds && i < json_object_array_length(conds); i++) {
		json_object *c = json_object_array_get_idx(conds, i);
		json_object *type = member(c, "type"), *s = member(c, "status");

		if (json_object_is_type(type, json_type_string) &&
		    !strcmp(json_object_get_string(type), MOAT_CONDITION_TYPE) &&
		    json_object_is_type(s, json_type_string))
			*status = json_object_get_string(s);
	}
	return 0;
}

/* moat's extended resources, @v (-1: withdrawn, null) in @list. */
static void resources(json_object *st, const char *list, long long cpu, long long mem)
{
	json_object *o = json_object_new_object();
	char buf[24];

	if (!o)
		return;
	snprintf(buf, sizeof(buf), "%lld", cpu);
	json_object_object_add(o, "moat.io/be-cpu", cpu < 0 ? NULL : json_object_new_string(buf));
	snprintf(buf, sizeof(buf), "%lld", mem);
	json_object_object_add(o, "moat.io/be-memory",
			       mem < 0 ? NULL : json_object_new_string(buf));
	json_object_object_add(st, list, o);
}

static json_object *condition(const struct moat_node_status *s, const char *was)
{
	json_object *c = json_object_new_object();
	const char *status;

	if (!c)
		return NULL;
	if (s->withdraw || !s->cond) {
		/* a strategic merge patch's directive: the element goes */
		json_object_object_add(c, "$patch", json_object_new_string("delete"));
		json_object_object_add(c, "type", json_object_new_string(MOAT_CONDITION_TYPE));
		return c;
	}
	status = s->cond->status ? "True" : "False";
	json_object_object_add(c, "type", json_object_new_string(MOAT_CONDITION_TYPE));
	json_object_object_add(c, "status", json_object_new_string(status));
	json_object_object_add(c, "reason", json_object_new_string(s->cond->reason));
	json_object_object_add(c, "message", json_object_new_string(s->cond->message));
	json_object_object_add(c, "lastHeartbeatTime", json_object_new_string(s->now));
	/* left out: the node's stays, as the status did */
	if (!was || strcmp(was, status))
		json_object_object_add(c, "lastTransitionTime", json_object_new_string(s->now));
	return c;
}

int moat_node_status_patch(const char *node, size_t len, const struct moat_node_status *s,
			   char **out, char *why, size_t whylen)
{
	json_object *o, *patch = NULL, *st, *conds, *c;
	const char *was;
	int err;

	*out = NULL;
	why[0] = '\0';
	err = parse_node(node, len, &o, why, whylen);
	if (!err)
		err = shown(o, &was, why, whylen);
	if (err)
		goto out;
	err = -ENOMEM;
	patch = json_object_new_object();
	st = json_object_new_object();
	if (!patch || !st) {
		json_object_put(st);
		goto out;
	}
	json_object_object_add(patch, "status", st);
	if (s->withdraw || (s->be_cpu_milli >= 0 && s->be_memory >= 0)) {
		resources(st, "capacity", s->be_cpu_milli, s->be_memory);
		resources(st, "allocatable", s->be_cpu_milli, s->be_memory);
	}
	/* a condition not wanted: moat's goes where the node has it */
	if (s->withdraw || s->cond || was) {
		conds = json_object_new_array();
		c = condition(s, was);
		if (!conds || !c || json_object_array_add(conds, c)) {
			json_object_put(conds);
			json_object_put(c);
			goto out;
		}
		json_object_object_add(st, "conditions", conds);
	}
	*out = strdup(text_of(patch));
	err = *out ? 0 : -ENOMEM;
out:
	json_object_put(patch);
	json_object_put(o);
	return err;
}

/* A map of resource names to percents, as koordinator's thresholds are. */
static int percents(json_object *m, const char *what, bool must, char *why, size_t whylen)
{
	if (!json_object_is_type(m, json_type_object)) {
		snprintf(why, whylen, "%s is not an object of resource names to percents", what);
		return -EINVAL;
	}
	if (must && !json_object_object_length(m)) {
		snprintf(why, whylen, "%s is empty: koordinator takes its own thresholds then", what);
		return -EINVAL;
	}
	json_object_object_foreach(m, res, pct) {
		int64_t v = json_object_get_int64(pct);

		if (!*res || !json_object_is_type(pct, json_type_int) || v < 0 || v > 100) {
			snprintf(why, whylen, "%s.%s is not a whole percent from 0 to 100", what, res);
			return -EINVAL;
		}
	}
	return 0;
}

int moat_koord_thresholds_check(const char *val, char *why, size_t whylen)
{
	static const char *const aggr[] = { "avg", "p50", "p90", "p95", "p99" };
	json_object *o, *v;
	size_t i;
	int err = -EINVAL;

	if (!*val)
		return 0;
	o = parse(val, strlen(val));
	if (!json_object_is_type(o, json_type_object)) {
		snprintf(why, whylen, "not a JSON object");
		goto out;
	}
	if (!json_object_object_get_ex(o, "usageThresholds", &v)) {
		snprintf(why, whylen, "no usageThresholds: koordinator takes its own then");
		goto out;
	}
	json_object_object_foreach(o, key, val2) {
		if (!strcmp(key, "usageThresholds") || !strcmp(key, "prodUsageThresholds")) {
			if (percents(val2, key, !strcmp(key, "usageThresholds"), why, whylen))
				goto out;
		} else if (!strcmp(key, "aggregatedUsage")) {
			if (!json_object_is_type(val2, json_type_object)) {
				snprintf(why, whylen, "aggregatedUsage is not an object");
				goto out;
			}
			json_object_object_foreach(val2, ak, av) {
				bool ok = false;

				if (!strcmp(ak, "usageThresholds")) {
					if (percents(av, "aggregatedUsage.usageThresholds", false,
						     why, whylen))
						goto out;
					continue;
				}
				if (!strcmp(ak, "usageAggregationType"))
					for (i = 0; i < sizeof(aggr) / sizeof(aggr[0]); i++)
						ok |= json_object_is_type(av, json_type_string) &&
						      !strcmp(json_object_get_string(av), aggr[i]);
				else if (!strcmp(ak, "usageAggregatedDuration"))
					ok = json_object_is_type(av, json_type_string);
				else {
					snprintf(why, whylen, "aggregatedUsage.%s is not a field of koordinator's CustomAggregatedUsage",
						 ak);
					goto out;
				}
				if (!ok) {
					snprintf(why, whylen, "aggregatedUsage.%s: not %s", ak,
						 strcmp(ak, "usageAggregationType") ? "a duration" :
						 "avg, p50, p90, p95 or p99");
					goto out;
				}
			}
		} else {
			snprintf(why, whylen, "%s is not a field of koordinator's CustomUsageThresholds",
				 key);
			goto out;
		}
	}
	err = 0;
out:
	json_object_put(o);
	return err;
}
