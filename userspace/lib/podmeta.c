// SPDX-License-Identifier: GPL-2.0-only
/*
 * Pod objects, watch events and pod lists as the Kubernetes API server
 * sends them (core/v1; "Efficient detection of changes" in the API
 * concepts): what moat keeps of a pod, checked against the API's own
 * validation (a namespace is a DNS label, a name a DNS subdomain, a UID
 * a UUID), so that nothing the API could not have sent reaches a log
 * line, a metric label or a knob.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "group.h"
#include "podmeta.h"

/* Deeper than any pod: a body nested past it is not one. */
#define JSON_DEPTH	64

__attribute__((format(printf, 3, 4)))
static int fail(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static json_object *parse(const char *text, size_t len)
{
	struct json_tokener *tok = json_tokener_new_ex(JSON_DEPTH);
	json_object *o;

	if (!tok)
		return NULL;
	o = json_tokener_parse_ex(tok, text, (int)len);
	/* the whole text, and nothing after the object but space */
	if (o && json_tokener_get_error(tok) == json_tokener_success) {
		size_t end = json_tokener_get_parse_end(tok);

		while (end < len && strchr(" \t\r\n", text[end]))
			end++;
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

static json_object *member(json_object *o, const char *key, json_type type)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) || !v ||
	    !json_object_is_type(v, type))
		return NULL;
	return v;
}

/* Whether member @key is there but not of @type (null counts as absent). */
static bool wrong_type(json_object *o, const char *key, json_type type)
{
	json_object *v;

	return o && json_object_object_get_ex(o, key, &v) && v &&
	       !json_object_is_type(v, type);
}

/* Every character of @s in @set, and 1 to @max of them. */
static bool made_of(const char *s, const char *set, size_t max)
{
	size_t n = strlen(s);

	return n && n <= max && strspn(s, set) == n;
}

#define DNS_CHARS	"abcdefghijklmnopqrstuvwxyz0123456789-"
#define UID_CHARS	"0123456789abcdefABCDEF-"
#define ID_CHARS	"0123456789abcdefABCDEF"

/* String member @key into @out (size @max + 1), checked against @set. */
static int text(json_object *o, const char *key, const char *set, size_t max,
		bool required, char *out, char *why, size_t len)
{
	json_object *v = member(o, key, json_type_string);
	const char *s;

	out[0] = '\0';
	if (!v) {
		if (wrong_type(o, key, json_type_string))
			return fail(why, len, "%s is not a string", key);
		return required ? fail(why, len, "no %s", key) : 0;
	}
	s = json_object_get_string(v);
	if ((size_t)json_object_get_string_len(v) != strlen(s) ||
	    !made_of(s, set, max))
		return fail(why, len, "%s is not one the API server makes", key);
	strcpy(out, s);
	return 0;
}

/*
 * The label moat.io/class.  A value the API server never takes (not a
 * string, past 63 characters, characters a label value cannot have) is
 * a malformed object; a valid one that is no class is kept, to be said
 * and ignored.
 */
static int label_class(json_object *labels, struct moat_pod_meta *p, char *why,
		       size_t len)
{
	json_object *v;
	const char *s;
	int c;

	p->label_class = MOAT_POD_LABEL_NONE;
	if (!labels || !json_object_object_get_ex(labels, MOAT_POD_CLASS_LABEL, &v))
		return 0;
	s = v && json_object_is_type(v, json_type_string) ?
	    json_object_get_string(v) : NULL;
	if (!s || (size_t)json_object_get_string_len(v) != strlen(s) ||
	    strlen(s) >= sizeof(p->label_value) ||
	    strspn(s, DNS_CHARS "ABCDEFGHIJKLMNOPQRSTUVWXYZ_.") != strlen(s))
		return fail(why, len, "label %s is no label value", MOAT_POD_CLASS_LABEL);
	p->label_class = MOAT_POD_LABEL_BAD;
	for (c = 0; moat_class_names[c]; c++)
		if (!strcmp(s, moat_class_names[c]))
			p->label_class = c;
	if (p->label_class == MOAT_POD_LABEL_BAD)
		strcpy(p->label_value, s);
	return 0;
}

/*
 * Who owns it, for eviction: never a DaemonSet's pod, never a static
 * one, a bare one (no controller makes it again) only where allowed.
 */
static void owners(json_object *meta, struct moat_pod_meta *p)
{
	json_object *refs = member(meta, "ownerReferences", json_type_array);
	json_object *ann = member(meta, "annotations", json_type_object), *v;
	size_t i, n = refs ? json_object_array_length(refs) : 0;

	for (i = 0; i < n; i++) {
		json_object *ref = json_object_array_get_idx(refs, i);
		json_object *kind = member(ref, "kind", json_type_string);
		json_object *ctl = member(ref, "controller", json_type_boolean);

		if (kind && !strcmp(json_object_get_string(kind), "DaemonSet"))
			p->daemonset = true;
		if (kind && !strcmp(json_object_get_string(kind), "Job"))
			p->job = true;
		if (ctl && json_object_get_boolean(ctl))
			p->controlled = true;
	}
	p->mirror = ann && json_object_object_get_ex(ann, "kubernetes.io/config.mirror", &v);
	p->terminating = member(meta, "deletionTimestamp", json_type_string) != NULL;
}

/*
 * The annotation MOAT_POD_TARGET_ANNOTATION: a whole number of
 * microseconds, 1 to MOAT_POD_TARGET_MAX_US, in decimal.  Anyone who may
 * make a pod may annotate it with anything, so another value is no
 * malformed object: it is kept, cut and printable, to be said and
 * ignored.
 */
static void target_annotation(json_object *meta, struct moat_pod_meta *p)
{
	json_object *ann = member(meta, "annotations", json_type_object);
	json_object *v = member(ann, MOAT_POD_TARGET_ANNOTATION, json_type_string);
	const char *s = v ? json_object_get_string(v) : NULL;
	size_t i, n = s ? strlen(s) : 0;
	long long us = 0;

	p->rqlat_target_us = 0;
	p->target_value[0] = '\0';
	if (!ann || !json_object_object_get_ex(ann, MOAT_POD_TARGET_ANNOTATION, NULL))
		return;
	for (i = 0; s && i < n && i < 9 && s[i] >= '0' && s[i] <= '9'; i++)
		us = us * 10 + (s[i] - '0');
	if (s && n && i == n && (size_t)json_object_get_string_len(v) == n && us >= 1 &&
	    us <= MOAT_POD_TARGET_MAX_US) {
		p->rqlat_target_us = us;
		return;
	}
	p->rqlat_target_us = -1;
	for (i = 0; s && s[i] && i < sizeof(p->target_value) - 1; i++)
		p->target_value[i] = s[i] > ' ' && s[i] < 0x7f && s[i] != '\'' ? s[i] : '?';
	p->target_value[i] = '\0';
}

static void containers(json_object *status, const char *key,
		       struct moat_pod_meta *p)
{
	json_object *a = member(status, key, json_type_array);
	size_t i, n = a ? json_object_array_length(a) : 0;

	for (i = 0; i < n && p->nr_containers < MOAT_POD_CONTAINERS; i++) {
		json_object *c = json_object_array_get_idx(a, i);
		struct moat_pod_container *pc = &p->c[p->nr_containers];
		json_object *id = member(c, "containerID", json_type_string);
		const char *s = id ? strstr(json_object_get_string(id), "://") : NULL;
		char why[8];

		/* not started yet, or not one a runtime names: left out */
		if (!s || !made_of(s + 3, ID_CHARS, MOAT_POD_CTR_ID_MAX - 1) ||
		    text(c, "name", DNS_CHARS, MOAT_POD_CTR_NAME_MAX - 1, true,
			 pc->name, why, sizeof(why)))
			continue;
		strcpy(pc->id, s + 3);
		pc->cpu_limit_m = -1;
		p->nr_containers++;
	}
}

int moat_cpu_quantity_m(const char *s, long long *m)
{
	static const struct { const char *sfx; int exp10, exp2; } sfx[] = {
		{ "n", -9, 0 }, { "u", -6, 0 }, { "m", -3, 0 }, { "", 0, 0 },
		{ "k", 3, 0 }, { "M", 6, 0 }, { "G", 9, 0 }, { "T", 12, 0 },
		{ "P", 15, 0 }, { "E", 18, 0 }, { "Ki", 0, 10 }, { "Mi", 0, 20 },
		{ "Gi", 0, 30 }, { "Ti", 0, 40 }, { "Pi", 0, 50 }, { "Ei", 0, 60 },
	};
	unsigned __int128 mant = 0, v, div = 1;
	int exp10 = 3, digits = 0, sig = 0, i;	/* 3: in millis */
	bool point = false, found = false;
	const char *p = s;

	if (*p == '+')
		p++;
	for (; *p; p++) {
		if (*p == '.' && !point) {
			point = true;
			continue;
		}
		if (*p < '0' || *p > '9')
			break;
		digits++;
		if (!sig && *p == '0') {
			exp10 -= point;
			continue;
		}
		if (++sig > 30)
			return -EINVAL;		/* no limit has 30 digits */
		mant = mant * 10 + (unsigned)(*p - '0');
		exp10 -= point;
	}
	if (!digits)
		return -EINVAL;
	if ((*p == 'e' || *p == 'E') && p[1] && strchr("+-0123456789", p[1])) {
		char *end;
		long e = strtol(p + 1, &end, 10);

		if (*end || end == p + 1 || e < -40 || e > 40)
			return -EINVAL;
		exp10 += (int)e;
		p = end;
		found = true;
	}
	for (i = 0; !found && i < (int)(sizeof(sfx) / sizeof(sfx[0])); i++) {
		if (strcmp(p, sfx[i].sfx))
			continue;
		exp10 += sfx[i].exp10;
		/* 2^60 times a 30-digit number overflows: a limit that large is none */
		if (sfx[i].exp2 && mant >> (127 - sfx[i].exp2))
			return -EINVAL;
		mant <<= sfx[i].exp2;
		found = true;
	}
	if (!found)
		return -EINVAL;
	for (; exp10 > 0; exp10--) {
		if (mant > (unsigned __int128)MOAT_POD_CPU_MAX_M)
			return -EINVAL;
		mant *= 10;
	}
	for (; exp10 < 0 && div < mant; exp10++)
		div *= 10;
	/* up, as MilliValue() rounds: a nanocore is a millicore */
	v = exp10 < 0 ? (mant ? 1 : 0) : (mant + div - 1) / div;
	if (v > (unsigned __int128)MOAT_POD_CPU_MAX_M)
		return -EINVAL;
	*m = (long long)v;
	return 0;
}

/* The CPU limit of a resources object (@where's), -1 where none or 0. */
static int cpu_limit(json_object *o, const char *where, long long *m, char *why,
		     size_t len)
{
	json_object *res = member(o, "resources", json_type_object), *lim, *cpu;

	*m = -1;
	if (wrong_type(o, "resources", json_type_object) ||
	    wrong_type(res, "limits", json_type_object))
		return fail(why, len, "%s resources is not an object", where);
	lim = member(res, "limits", json_type_object);
	if (!lim || !json_object_object_get_ex(lim, "cpu", &cpu) || !cpu)
		return 0;
	if (!json_object_is_type(cpu, json_type_string) ||
	    moat_cpu_quantity_m(json_object_get_string(cpu), m))
		return fail(why, len, "%s limits.cpu is not a CPU quantity", where);
	if (!*m)
		*m = -1;	/* a zero limit is none (Quantity.IsZero()) */
	return 0;
}

/* Container @c of the spec's CPU limit, on the started one of its name. */
static int ctr_limit(json_object *c, const char *where, long long *m,
		     struct moat_pod_meta *p, char *why, size_t len)
{
	json_object *name = member(c, "name", json_type_string);
	size_t i;

	if (!c || !json_object_is_type(c, json_type_object))
		return fail(why, len, "%s is not an object", where);
	if (cpu_limit(c, where, m, why, len))
		return -EINVAL;
	for (i = 0; name && i < p->nr_containers; i++)
		if (!strcmp(p->c[i].name, json_object_get_string(name)))
			p->c[i].cpu_limit_m = *m;
	return 0;
}

/*
 * The CPU limit kubelet gives the pod's own cgroup (its
 * ResourceConfigForPod()): the pod's own (pod-level resources), else,
 * where every container has one, the containers' and sidecars' together
 * or the largest an init container needs beside the sidecars started
 * before it, whichever is more; its overhead (RuntimeClass) on top.
 */
static int spec_cpu(json_object *spec, struct moat_pod_meta *p, char *why, size_t len)
{
	json_object *ctrs = member(spec, "containers", json_type_array);
	json_object *inits = member(spec, "initContainers", json_type_array);
	json_object *over = member(spec, "overhead", json_type_object), *cpu;
	long long sum = 0, sidecars = 0, most = 0, m, own, extra = 0;
	size_t i, n = ctrs ? json_object_array_length(ctrs) : 0;
	bool every = n > 0;

	p->cpu_limit_m = -1;
	if (wrong_type(spec, "containers", json_type_array) ||
	    wrong_type(spec, "initContainers", json_type_array) ||
	    wrong_type(spec, "overhead", json_type_object))
		return fail(why, len, "%s", "spec's containers, initContainers or overhead is of the wrong type");
	for (i = 0; i < n; i++) {
		if (ctr_limit(json_object_array_get_idx(ctrs, i), "a container's", &m,
			      p, why, len))
			return -EINVAL;
		every &= m > 0;
		sum += m > 0 ? m : 0;
	}
	n = inits ? json_object_array_length(inits) : 0;
	for (i = 0; i < n; i++) {
		json_object *c = json_object_array_get_idx(inits, i);
		json_object *rp = member(c, "restartPolicy", json_type_string);

		if (ctr_limit(c, "an init container's", &m, p, why, len))
			return -EINVAL;
		m = m > 0 ? m : 0;
		if (rp && !strcmp(json_object_get_string(rp), "Always")) {
			sidecars += m;		/* a sidecar: it runs on */
			sum += m;
		} else if (sidecars + m > most) {
			most = sidecars + m;
		}
	}
	if (over && json_object_object_get_ex(over, "cpu", &cpu) && cpu &&
	    (!json_object_is_type(cpu, json_type_string) ||
	     moat_cpu_quantity_m(json_object_get_string(cpu), &extra)))
		return fail(why, len, "%s", "spec.overhead.cpu is not a CPU quantity");
	if (cpu_limit(spec, "the pod's", &own, why, len))
		return -EINVAL;
	if (own > 0)
		p->cpu_limit_m = own + extra;
	else if (every)
		p->cpu_limit_m = (sum > most ? sum : most) + extra;
	return 0;
}

static int pod_from(json_object *pod, struct moat_pod_meta *p, char *rv,
		    char *why, size_t len)
{
	json_object *meta, *spec, *status, *prio;
	int err;

	memset(p, 0, sizeof(*p));
	if (rv)
		rv[0] = '\0';
	if (!pod || !json_object_is_type(pod, json_type_object))
		return fail(why, len, "%s", "the object is not a JSON object");
	meta = member(pod, "metadata", json_type_object);
	if (!meta)
		return fail(why, len, "%s", "no metadata");
	spec = member(pod, "spec", json_type_object);
	status = member(pod, "status", json_type_object);
	if (wrong_type(pod, "spec", json_type_object) ||
	    wrong_type(pod, "status", json_type_object) ||
	    wrong_type(meta, "labels", json_type_object))
		return fail(why, len, "%s", "spec, status or labels is not an object");
	err = text(meta, "uid", UID_CHARS, MOAT_POD_UID_MAX - 1, true, p->uid,
		   why, len);
	if (!err)
		err = text(meta, "namespace", DNS_CHARS, MOAT_POD_NS_MAX - 1, true,
			   p->ns, why, len);
	if (!err)
		err = text(meta, "name", DNS_CHARS ".", MOAT_POD_NAME_MAX - 1, true,
			   p->name, why, len);
	if (!err && rv)
		err = text(meta, "resourceVersion", "0123456789", MOAT_POD_RV_MAX - 1,
			   false, rv, why, len);
	if (!err)
		err = text(spec, "priorityClassName", DNS_CHARS ".",
			   MOAT_POD_NAME_MAX - 1, false, p->priority_class, why, len);
	if (!err)
		err = text(status, "qosClass", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
			   sizeof(p->qos) - 1, false, p->qos, why, len);
	if (err)
		return err;
	prio = member(spec, "priority", json_type_int);
	if (wrong_type(spec, "priority", json_type_int))
		return fail(why, len, "%s", "spec.priority is not an integer");
	p->priority = prio ? json_object_get_int64(prio) : 0;
	err = label_class(member(meta, "labels", json_type_object), p, why, len);
	if (err)
		return err;
	owners(meta, p);
	target_annotation(meta, p);
	containers(status, "containerStatuses", p);
	containers(status, "initContainerStatuses", p);
	containers(status, "ephemeralContainerStatuses", p);
	return spec_cpu(spec, p, why, len);
}

int moat_pod_meta_parse(const char *json, size_t len, struct moat_pod_meta *out,
			char *rv, char *why, size_t whylen)
{
	json_object *o = parse(json, len);
	int err;

	if (!o)
		return fail(why, whylen, "%s", "not JSON");
	err = pod_from(o, out, rv, why, whylen);
	json_object_put(o);
	return err;
}

static const char *const watch_types[] = {
	[MOAT_WATCH_ADDED] = "ADDED",
	[MOAT_WATCH_MODIFIED] = "MODIFIED",
	[MOAT_WATCH_DELETED] = "DELETED",
	[MOAT_WATCH_BOOKMARK] = "BOOKMARK",
	[MOAT_WATCH_ERROR] = "ERROR",
};

int moat_watch_event_parse(const char *line, size_t len,
			   struct moat_watch_event *out, char *why, size_t whylen)
{
	json_object *o = parse(line, len), *type, *obj, *meta, *code;
	const char *t;
	int err = 0;
	size_t i;

	memset(out, 0, sizeof(*out));
	if (!o)
		return fail(why, whylen, "%s", "not JSON");
	type = member(o, "type", json_type_string);
	obj = member(o, "object", json_type_object);
	if (!type || !obj) {
		json_object_put(o);
		return fail(why, whylen, "%s", "no type or no object");
	}
	t = json_object_get_string(type);
	for (i = 0; i < sizeof(watch_types) / sizeof(watch_types[0]); i++)
		if (!strcmp(t, watch_types[i]))
			break;
	if (i == sizeof(watch_types) / sizeof(watch_types[0])) {
		json_object_put(o);
		return fail(why, whylen, "%s", "an unknown type");
	}
	out->type = i;
	switch (out->type) {
	case MOAT_WATCH_ERROR:
		/* a Status: its code (410 when the version is too old) */
		code = member(obj, "code", json_type_int);
		out->code = code ? json_object_get_int(code) : 0;
		break;
	case MOAT_WATCH_BOOKMARK:
		/* a Pod with only its resourceVersion */
		meta = member(obj, "metadata", json_type_object);
		err = text(meta, "resourceVersion", "0123456789", MOAT_POD_RV_MAX - 1,
			   true, out->rv, why, whylen);
		break;
	default:
		err = pod_from(obj, &out->pod, out->rv, why, whylen);
		break;
	}
	json_object_put(o);
	return err;
}

/*
 * A list is parsed a pod at a time as its text arrives, so that its peak
 * is one pod's text and tree, whatever the list's length: not the list's
 * tree (json-c's objects take several times the text: a 64 MiB page once
 * took moatd's RSS to 99 MB), nor its text (the API server's watch cache
 * answers with every pod of the node in one page).  The scanner below
 * steps over a JSON value without building it, and says when the text
 * ended inside it (*@more: wait for the rest); json-c then parses each
 * item, and the list's metadata, on its own, and so checks them whole.
 */
static const char *skip_space(const char *p, const char *end)
{
	while (p < end && strchr(" \t\r\n", *p) && *p)
		p++;
	return p;
}

/* Past the string at @p (its opening quote), or NULL. */
static const char *skip_string(const char *p, const char *end, bool *more)
{
	for (p++; p < end; p++) {
		if (*p == '\\') {
			p++;
			continue;
		}
		if (*p == '"')
			return p + 1;
		if ((unsigned char)*p < 0x20)
			return NULL;
	}
	*more = true;
	return NULL;
}

/*
 * Past the value at @p, or NULL where it is not one (or nested past
 * JSON_DEPTH), or the text ended first (*@more).  A number, true, false
 * or null that reaches @end may go on: *@more too.  Each open bracket's
 * kind is a bit of @objects, so that a ']' must close a '[' and a '}' a
 * '{'.
 */
static const char *skip_value(const char *p, const char *end, bool *more)
{
	unsigned long long objects = 0;
	int depth = 0;

	do {
		p = skip_space(p, end);
		if (p >= end) {
			*more = true;
			return NULL;
		}
		switch (*p) {
		case '"':
			p = skip_string(p, end, more);
			if (!p)
				return NULL;
			break;
		case '{':
		case '[':
			if (depth == JSON_DEPTH)
				return NULL;
			objects = objects << 1 | (*p == '{');
			depth++;
			p++;
			continue;
		case '}':
		case ']':
			if (!depth || (objects & 1) != (*p == '}'))
				return NULL;
			objects >>= 1;
			depth--;
			p++;
			break;
		case ',':
		case ':':
			if (!depth)
				return NULL;
			p++;
			continue;
		default:	/* a number, true, false, null: json-c checks them */
			if (!*p || !strchr("-0123456789tfn", *p))
				return NULL;
			while (p < end && *p && !strchr(",:]} \t\r\n", *p))
				p++;
			if (p == end)
				*more = true;
			break;
		}
	} while (depth);
	return p;
}

static bool key_is(const char *key, size_t len, const char *want)
{
	return len == strlen(want) && !memcmp(key, want, len);
}

enum list_at {
	AT_START,		/* before the list's '{' */
	AT_MEMBER,		/* before a member's key (or the '}' of {}) */
	AT_NEXT,		/* after a member: ',' or '}' */
	AT_ITEM,		/* before an item (or the ']' of []) */
	AT_ITEM_NEXT,		/* after an item: ',' or ']' */
	AT_DONE,		/* after the '}': space only */
};

struct moat_pod_list_stream {
	int (*fn)(const struct moat_pod_meta *pod, void *ctx);
	void *ctx;
	size_t item_max;
	char *buf;		/* the text not yet parsed, from pos */
	size_t pos, n, cap;
	enum list_at at;
	bool first;		/* the object's or the array's first */
	bool items;		/* "items" seen */
	char *meta;		/* the list's metadata's text */
	size_t meta_len;
	size_t bad;
	int err;		/* the first error: nothing more is read */
	char why[256];
};

struct moat_pod_list_stream *moat_pod_list_stream_new(size_t item_max,
		int (*fn)(const struct moat_pod_meta *pod, void *ctx), void *ctx)
{
	struct moat_pod_list_stream *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->fn = fn;
	s->ctx = ctx;
	s->item_max = item_max;
	return s;
}

void moat_pod_list_stream_free(struct moat_pod_list_stream *s)
{
	if (!s)
		return;
	free(s->buf);
	free(s->meta);
	free(s);
}

static int stream_fail(struct moat_pod_list_stream *s, int err, const char *why)
{
	snprintf(s->why, sizeof(s->why), "%s", why);
	return s->err = err;
}

/* An item, [@p, @q): to pod_from() and the caller's fn. */
static int stream_item(struct moat_pod_list_stream *s, const char *p, const char *q)
{
	json_object *o = parse(p, (size_t)(q - p));
	struct moat_pod_meta pod;
	char reason[256];
	int err = 0;

	if (!o)
		return stream_fail(s, -EINVAL, "not JSON: an item");
	if (pod_from(o, &pod, NULL, reason, sizeof(reason))) {
		if (!s->bad++)
			snprintf(s->why, sizeof(s->why), "%s", reason);
	} else {
		err = s->fn(&pod, s->ctx);
	}
	json_object_put(o);
	return err ? (s->err = err) : 0;
}

/*
 * One step at the text from s->pos: 1 when it took some, 0 when it needs
 * more text, else the error.
 */
static int stream_step(struct moat_pod_list_stream *s)
{
	const char *b = s->buf + s->pos, *end = s->buf + s->n, *p = skip_space(b, end);
	const char *key, *q;
	bool more = false;
	size_t key_len;
	int err;

	if (p >= end) {
		s->pos = s->n;
		return 0;
	}
	switch (s->at) {
	case AT_START:
		if (*p != '{')
			return stream_fail(s, -EINVAL, "not JSON: no object");
		s->at = AT_MEMBER;
		s->first = true;
		p++;
		break;
	case AT_MEMBER:
		if (s->first && *p == '}') {
			s->at = AT_DONE;
			p++;
			break;
		}
		if (*p != '"')
			return stream_fail(s, -EINVAL, "not JSON");
		q = skip_string(p, end, &more);
		if (!q)
			return more ? 0 : stream_fail(s, -EINVAL, "not JSON");
		key = p + 1;
		key_len = (size_t)(q - p - 2);
		q = skip_space(q, end);
		if (q < end && *q != ':')
			return stream_fail(s, -EINVAL, "not JSON");
		q = skip_space(q + (q < end), end);
		if (q >= end)
			return 0;
		if (key_is(key, key_len, "items") && *q == '[') {
			if (s->items)
				return stream_fail(s, -EINVAL, "not a list: items twice");
			s->items = true;
			s->at = AT_ITEM;
			s->first = true;
			p = q + 1;
			break;
		}
		p = q;
		q = skip_value(p, end, &more);
		if (!q)
			return more ? 0 : stream_fail(s, -EINVAL, "not JSON");
		if (q == end)
			return 0;	/* what follows it: a ',' or '}' */
		if (key_is(key, key_len, "items") && !(q - p == 4 && !memcmp(p, "null", 4)))
			return stream_fail(s, -EINVAL, "not a list: its items are no array");
		if (key_is(key, key_len, "metadata")) {
			free(s->meta);
			s->meta = strndup(p, (size_t)(q - p));
			if (!s->meta)
				return stream_fail(s, -ENOMEM, "out of memory");
			s->meta_len = (size_t)(q - p);
		}
		s->at = AT_NEXT;
		p = q;
		break;
	case AT_NEXT:
	case AT_ITEM_NEXT:
		if (*p == ',') {
			s->at = s->at == AT_NEXT ? AT_MEMBER : AT_ITEM;
			s->first = false;
		} else if (*p == (s->at == AT_NEXT ? '}' : ']')) {
			s->at = s->at == AT_NEXT ? AT_DONE : AT_NEXT;
		} else {
			return stream_fail(s, -EINVAL, s->at == AT_NEXT ? "not JSON" :
					   "not JSON: the items");
		}
		p++;
		break;
	case AT_ITEM:
		if (*p == ']') {
			if (!s->first)
				return stream_fail(s, -EINVAL, "not JSON: the items");
			s->at = AT_NEXT;
			p++;
			break;
		}
		q = skip_value(p, end, &more);
		if (!q)
			return more ? 0 : stream_fail(s, -EINVAL, "not JSON: an item");
		if (q == end)
			return 0;	/* what follows it: a ',' or ']' */
		err = stream_item(s, p, q);
		if (err)
			return err;
		s->at = AT_ITEM_NEXT;
		p = q;
		break;
	case AT_DONE:
		return stream_fail(s, -EINVAL, "not JSON: text after the list");
	}
	s->pos = (size_t)(p - s->buf);
	return 1;
}

int moat_pod_list_stream_feed(struct moat_pod_list_stream *s, const char *text, size_t len)
{
	size_t cap;
	char *v;
	int r;

	if (s->err)
		return s->err;
	/* what was parsed goes, and the rest moves to the front */
	if (s->pos) {
		memmove(s->buf, s->buf + s->pos, s->n - s->pos);
		s->n -= s->pos;
		s->pos = 0;
	}
	if (s->n + len + 1 > s->cap) {
		for (cap = s->cap ? s->cap : 16384; cap < s->n + len + 1; cap *= 2)
			;
		v = realloc(s->buf, cap);
		if (!v)
			return stream_fail(s, -ENOMEM, "out of memory");
		s->buf = v;
		s->cap = cap;
	}
	memcpy(s->buf + s->n, text, len);
	s->n += len;
	s->buf[s->n] = '\0';
	while ((r = stream_step(s)) > 0)
		;
	/* what is left is part of one item (or member): no more than its limit */
	if (!r && s->n - s->pos > s->item_max)
		r = stream_fail(s, -E2BIG, "an item past its limit");
	return r;
}

int moat_pod_list_stream_end(struct moat_pod_list_stream *s, char *rv, char *cont,
			     size_t cont_len, size_t *bad, char *why, size_t whylen)
{
	json_object *meta, *c;
	int err;

	*bad = s->bad;
	rv[0] = cont[0] = '\0';
	if (s->bad)
		snprintf(why, whylen, "%s", s->why);
	if (s->err) {
		snprintf(why, whylen, "%s", s->why);
		return s->err;
	}
	if (s->at != AT_DONE || skip_space(s->buf + s->pos, s->buf + s->n) != s->buf + s->n)
		return fail(why, whylen, "%s", s->at == AT_START ? "not JSON: no object" :
			    "not JSON: the list ends early");
	if (!s->meta)
		return fail(why, whylen, "%s", "not a list: no metadata");
	meta = parse(s->meta, s->meta_len);
	if (!json_object_is_type(meta, json_type_object)) {
		json_object_put(meta);
		return fail(why, whylen, "%s", "not a list: its metadata is not an object");
	}
	err = text(meta, "resourceVersion", "0123456789", MOAT_POD_RV_MAX - 1, true,
		   rv, why, whylen);
	c = member(meta, "continue", json_type_string);
	if (!err && c) {
		if ((size_t)json_object_get_string_len(c) >= cont_len)
			err = fail(why, whylen, "%s", "a continue token too long");
		else
			strcpy(cont, json_object_get_string(c));
	}
	json_object_put(meta);
	return err;
}

int moat_pod_list_parse(const char *json, size_t len,
			int (*fn)(const struct moat_pod_meta *pod, void *ctx),
			void *ctx, char *rv, char *cont, size_t cont_len,
			size_t *bad, char *why, size_t whylen)
{
	struct moat_pod_list_stream *s = moat_pod_list_stream_new(len, fn, ctx);
	int err;

	*bad = 0;
	rv[0] = cont[0] = '\0';
	if (!s)
		return fail(why, whylen, "%s", "out of memory");
	moat_pod_list_stream_feed(s, json, len);
	err = moat_pod_list_stream_end(s, rv, cont, cont_len, bad, why, whylen);
	moat_pod_list_stream_free(s);
	return err;
}

const struct moat_pod_container *moat_pod_container(const struct moat_pod_meta *p,
						    const char *id)
{
	size_t i;

	for (i = 0; i < p->nr_containers; i++)
		if (!strcmp(p->c[i].id, id))
			return &p->c[i];
	return NULL;
}
