// SPDX-License-Identifier: GPL-2.0-only
/*
 * The groups moatd tracks: found by walking the cpu controller's
 * hierarchy, each with its knobs under groups/<id>/ and each module's
 * state of it, classified by the QoS defaults (classes/guaranteed, burstable, besteffort), the rules
 * (rules/<name> = "<glob> <class>") and per-group overrides.
 *
 * Walking is most of a rescan's work, so it happens when a cgroup event
 * (bpf/cgroup_events.bpf.c) says a cgroup was made, removed or renamed,
 * when a rule changed, and every rescan_ms in case an event was missed;
 * where the events cannot attach, every period.  When rescan_ms is up
 * and the cgroup iterator (observe.c) read the cgroups below the root
 * last period, the walk is needed only if they are not the ones the last
 * walk found: the same fingerprint of their ids means no cgroup came or
 * went unseen, and at 500 groups the walk was a quarter of moatd's CPU.
 */
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cgroup.h"
#include "cgroup_events_bpf.h"
#include "groups.h"
#include "log.h"
#include "observe.h"

/* rules/<name>: a fixed slot each, so that its knob's storage stays put. */
struct rule_slot {
	bool used;
	enum rule_family family;
	char text[MOAT_KNOB_VALUE_MAX];
	struct moat_rule rule;
};

/* Per-group class overrides, by id: they outlive the groups. */
struct override {
	char id[MOAT_ID_MAX];
	unsigned int class;		/* enum moat_class */
};

/* Groups found or gone since the last rescan's summary line. */
#define CHURN_NAMED	3
struct churn {
	size_t n;
	char id[CHURN_NAMED][MOAT_ID_MAX];
};

/* A task that entered a tracked unit (the BPF hooks), for resctrl. */
struct task_event {
	__u64 unit;
	__u32 tid;
};

/* The module's state of a group: the way back to the module. */
struct group_in {
	struct groups *gs;
	bool said_label;	/* its label's refusal was logged */
	bool lc_job;		/* a Job's pod, lc by its tier's class: said */
};

struct groups {
	struct moatd *d;
	struct moat_qos_classes qos;
	struct rule_slot rules[RULES_NR][MOATD_MAX_RULES];
	/* the used rules in name order, as classification tries them */
	struct moat_rule active[RULES_NR][MOATD_MAX_RULES];
	size_t nr_active[RULES_NR];
	struct override *overrides;
	size_t nr_overrides;
	/* classes/label_namespaces: where moat.io/class may raise a class */
	char label_ns[256];
	char spared_ns[256];	/* namespaces whose pods are never BE */
	struct moat_cgroup_events *events;	/* NULL: walk every period */
	bool changed;			/* an event or a rule since the walk */
	unsigned int rescan_ms;		/* walk at least this often anyway */
	struct timespec last_rescan;
	__u64 walked_fp;		/* the cgroups the last walk found */
	bool walked_fp_valid;
	unsigned long long walks;	/* rescans: walks of the hierarchy */
	struct churn found, gone;
	struct task_event tasks[256];
	size_t nr_tasks, next_task;
	bool tasks_lost;
};

static struct groups *G(const struct moatd *d)
{
	return moatd_mod(d, MOD_GROUPS);
}

static double ms_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t->tv_sec) * 1e3 + (now.tv_nsec - t->tv_nsec) / 1e6;
}

/* ---- rules ---- */

/*
 * Three families of rules, each a knob directory of "<glob> <class>"
 * values: rules/<name> match a cgroup's path, classes/priority/<name> a
 * pod's priorityClassName, classes/namespace/<name> its namespace.  Each
 * family is tried in name order.
 */
static const char *const rule_dirs[RULES_NR] = {
	[RULES_PATH] = "rules/",
	[RULES_PRIORITY] = "classes/priority/",
	[RULES_NAMESPACE] = "classes/namespace/",
};

/* What a rule's value is: one text, whether the rule is new or not. */
static const char *const rule_expects[RULES_NR] = {
	[RULES_PATH] = "'<glob> <class>': a glob relative to the cgroup root, "
		       "without '..', and none, lc or be; '' removes the rule",
	[RULES_PRIORITY] = "'<glob> <class>': a glob of a pod's priorityClassName "
			   "(a-z, 0-9, '-', '.' and * ? [...]), and none, lc or be; "
			   "'' removes the rule",
	[RULES_NAMESPACE] = "'<glob> <class>': a glob of a pod's namespace "
			    "(a-z, 0-9, '-' and * ? [...]), and none, lc or be; "
			    "'' removes the rule",
};

const char *rules_name(const char *path, enum rule_family *family)
{
	size_t f, n;

	for (f = 0; f < RULES_NR; f++) {
		n = strlen(rule_dirs[f]);
		if (!strncmp(path, rule_dirs[f], n) && !strchr(path + n, '/')) {
			if (family)
				*family = f;
			return path + n;
		}
	}
	return NULL;
}

static int rule_parse(enum rule_family f, const char *name, const char *val,
		      struct moat_rule *r)
{
	int err = moat_rule_parse(name, val, r);

	/* a priority class's name is a DNS subdomain: no path in it */
	if (!err && f == RULES_PRIORITY &&
	    strspn(r->glob, "abcdefghijklmnopqrstuvwxyz0123456789-.*?[]!^") !=
	    strlen(r->glob))
		err = -EINVAL;
	/* a namespace's, a DNS label: not even a dot */
	if (!err && f == RULES_NAMESPACE &&
	    strspn(r->glob, "abcdefghijklmnopqrstuvwxyz0123456789-*?[]!^") !=
	    strlen(r->glob))
		err = -EINVAL;
	return err;
}

static int rule_check(const struct moat_knob *k, const char *val, char *why,
		      size_t len)
{
	struct rule_slot *slot = k->owner;
	struct moat_rule r;

	if (!*val)
		return 0;
	return rule_parse(slot->family, slot->rule.name, val, &r);
}

static void rule_store(const struct moat_knob *k, unsigned int u,
		       const char *val)
{
	struct rule_slot *slot = k->owner;
	struct moat_rule r;

	if (!*val) {
		/* Only the slot: the knob goes with rule_remove(). */
		slot->text[0] = '\0';
		return;
	}
	/* (not into slot->rule: its name is the name parsed from) */
	rule_parse(slot->family, slot->rule.name, val, &r);
	slot->rule = r;
	strcpy(slot->text, val);
}

static struct rule_slot *rule_find(const struct groups *gs, enum rule_family f,
				   const char *name)
{
	size_t i;

	for (i = 0; i < MOATD_MAX_RULES; i++)
		if (gs->rules[f][i].used && !strcmp(gs->rules[f][i].rule.name, name))
			return (struct rule_slot *)&gs->rules[f][i];
	return NULL;
}

int rules_check(const char *path, const char *val, char *why, size_t len)
{
	enum rule_family f;
	const char *name = rules_name(path, &f);
	struct moat_rule r;

	if (!name || !moat_id_valid(name))
		return -ENOENT;
	if (*val && (!moat_value_valid(val) || rule_parse(f, name, val, &r))) {
		snprintf(why, len, "%s", rule_expects[f]);
		return -EINVAL;
	}
	return 0;
}

static int rule_create(struct moatd *d, enum rule_family f, const char *name)
{
	struct moat_knob k = {
		.type = MOAT_KNOB_STRING, .writable = true,
		.str_max = MOAT_KNOB_VALUE_MAX, .check = rule_check,
		.store = rule_store, .expects = rule_expects[f],
	};
	struct groups *gs = G(d);
	struct rule_slot *slot = NULL;
	size_t i;
	int err;

	if (!moat_id_valid(name))
		return -EINVAL;
	for (i = 0; i < MOATD_MAX_RULES && !slot; i++)
		if (!gs->rules[f][i].used)
			slot = &gs->rules[f][i];
	if (!slot)
		return -E2BIG;
	snprintf(k.path, sizeof(k.path), "%s%s", rule_dirs[f], name);
	k.data = slot->text;
	k.owner = slot;
	memset(slot, 0, sizeof(*slot));
	slot->family = f;
	strcpy(slot->rule.name, name);
	err = moat_knob_add(d->tree, &k);
	if (!err)
		slot->used = true;
	return err;
}

static void rule_remove(struct moatd *d, enum rule_family f, const char *name)
{
	struct rule_slot *slot = rule_find(G(d), f, name);
	char path[MOAT_KNOB_PATH_MAX];

	if (!slot)
		return;
	slot->used = false;
	snprintf(path, sizeof(path), "%s%s", rule_dirs[f], name);
	moat_knob_remove_dir(d->tree, path);
}

int rules_set(struct moatd *d, const char *path, const char *val)
{
	enum rule_family f;
	const char *name = rules_name(path, &f);
	bool created = false;
	int err;

	if (!name)
		return -ENOENT;
	if (!rule_find(G(d), f, name)) {
		if (!*val)
			return -ENOENT;
		err = rule_create(d, f, name);
		if (err)
			return err == -E2BIG ? -E2BIG : -ENOENT;
		created = true;
	}
	err = moat_knob_set(d->tree, path, val);
	if ((err && created) || (!err && !*val))
		rule_remove(d, f, name);
	/* a rule classifies at once: walk now, not in rescan_ms */
	if (!err)
		G(d)->changed = true;
	return err;
}

bool rules_exists(const struct moatd *d, const char *path)
{
	enum rule_family f;
	const char *name = rules_name(path, &f);

	return name && rule_find(G(d), f, name);
}

void rules_for_each(const struct moatd *d,
		    void (*fn)(struct moatd *d, const char *path, void *ctx),
		    void *ctx)
{
	struct groups *gs = G(d);
	char path[MOAT_KNOB_PATH_MAX];
	size_t f, i;

	for (f = 0; f < RULES_NR; f++)
		for (i = 0; i < MOATD_MAX_RULES; i++) {
			if (!gs->rules[f][i].used)
				continue;
			/* (a copy: @fn may remove it) */
			snprintf(path, sizeof(path), "%s%s", rule_dirs[f],
				 gs->rules[f][i].rule.name);
			fn(gs->d, path, ctx);
		}
}

static int cmp_rule(const void *a, const void *b)
{
	const struct moat_rule *x = a, *y = b;

	return strcmp(x->name, y->name);
}

static void rules_activate(struct groups *gs)
{
	size_t f, i;

	for (f = 0; f < RULES_NR; f++) {
		gs->nr_active[f] = 0;
		for (i = 0; i < MOATD_MAX_RULES; i++)
			if (gs->rules[f][i].used && gs->rules[f][i].text[0])
				gs->active[f][gs->nr_active[f]++] = gs->rules[f][i].rule;
		if (gs->nr_active[f])
			qsort(gs->active[f], gs->nr_active[f], sizeof(gs->active[f][0]),
			      cmp_rule);
	}
}

/* ---- classes ---- */

/* groups/<id>/class: reads the effective class, writes the override. */
static const char *const class_choices[] = { "auto", "none", "lc", "be", NULL };
#define CLASS_AUTO 0

static struct override *find_override(struct groups *gs, const char *id)
{
	size_t i;

	for (i = 0; i < gs->nr_overrides; i++)
		if (!strcmp(gs->overrides[i].id, id))
			return &gs->overrides[i];
	return NULL;
}

static struct moatd_group *find_group(struct moatd *d, const char *id)
{
	size_t i;

	for (i = 0; i < d->nr_groups; i++)
		if (!strcmp(d->groups[i]->gid.id, id))
			return d->groups[i];
	return NULL;
}

/* A class's rank in what it is spared: BE is throttled, none is left alone, LC is protected. */
static int spared(unsigned int class)
{
	return class == MOAT_CLASS_LC ? 2 : class == MOAT_CLASS_NONE ? 1 : 0;
}

/*
 * A group's class and what decided it, highest first: the runtime
 * override (groups/<id>/class); its pod's label moat.io/class; the first
 * classes/priority/ rule, in name order, its pod's priorityClassName
 * matches; the first classes/namespace/ rule its namespace matches; the
 * first rules/ rule its path matches; its QoS tier's class.
 * A container has its pod's metadata, so its pod's class.
 *
 * Anyone who may make a pod may label it, so the label is taken as it is
 * only in the namespaces of classes/label_namespaces; elsewhere it may
 * only lower the class the admin's rules give (lc, then none, then be):
 * a batch pod labelled lc is not spared its throttling.
 */
static void rules_class(struct groups *gs, struct moatd_group *g)
{
	struct override *o = find_override(gs, g->gid.id);
	struct group_in *gi = group_mod(g, MOD_GROUPS);
	const struct group_meta *m = &g->meta;
	bool by_priority;
	size_t i;

	if (o) {
		g->class = o->class;
		snprintf(g->class_source, sizeof(g->class_source), "override");
		return;
	}
	g->class = g->gid.class;
	snprintf(g->class_source, sizeof(g->class_source), "%s", g->gid.source);
	for (i = 0; m->known && m->priority_class[0] &&
		    i < gs->nr_active[RULES_PRIORITY]; i++) {
		const struct moat_rule *r = &gs->active[RULES_PRIORITY][i];

		if (!fnmatch(r->glob, m->priority_class, 0)) {
			g->class = r->class;
			snprintf(g->class_source, sizeof(g->class_source),
				 "priority:%s", r->name);
			break;
		}
	}
	/* no priority class's rule: the first namespace's that matches */
	by_priority = !strncmp(g->class_source, "priority:", 9);
	for (i = 0; !by_priority && m->known && i < gs->nr_active[RULES_NAMESPACE]; i++) {
		const struct moat_rule *r = &gs->active[RULES_NAMESPACE][i];

		if (!fnmatch(r->glob, m->ns, 0)) {
			g->class = r->class;
			snprintf(g->class_source, sizeof(g->class_source),
				 "namespace-rule:%s", r->name);
			break;
		}
	}
	if (!m->known || m->label_class < 0)
		return;
	if (spared(m->label_class) <= spared(g->class) ||
	    moat_names_has(gs->label_ns, m->ns)) {
		g->class = m->label_class;
		snprintf(g->class_source, sizeof(g->class_source), "label:%s",
			 MOAT_POD_CLASS_LABEL);
		gi->said_label = false;
		return;
	}
	if (g->gid.kind == MOAT_GROUP_POD && !gi->said_label)
		pr_warn("pod %s/%s: label %s=%s ignored: it may only lower the class (%s here) outside classes/label_namespaces",
			m->ns, m->name, MOAT_POD_CLASS_LABEL, moat_class_names[m->label_class],
			moat_class_names[g->class]);
	gi->said_label = true;
}

/*
 * The class, then the namespaces whose pods are never throttled
 * (classes/spared_namespaces, kube-system by default: the cluster's own
 * DNS, CNI and proxies run there, often besteffort): a pod there that
 * would be BE is none, left alone.  Only the runtime override
 * (groups/<id>/class) makes one BE.  The change is said by
 * groups_reclassify(), with "namespace:<ns>" as what decided it.
 */
static void update_class(struct groups *gs, struct moatd_group *g)
{
	struct group_in *gi = group_mod(g, MOD_GROUPS);
	const struct group_meta *m = &g->meta;
	bool lc_job;

	rules_class(gs, g);
	if (g->class == MOAT_CLASS_BE && m->known && strcmp(g->class_source, "override") &&
	    moat_names_has(gs->spared_ns, m->ns)) {
		g->class = MOAT_CLASS_NONE;
		snprintf(g->class_source, sizeof(g->class_source), "namespace:%s", m->ns);
	}
	/*
	 * A Job's pod that is LC only by its QoS tier's class (every
	 * burstable pod is, by default): batch work protected, never
	 * throttled.  Said once while it stays so, and counted
	 * (classes/lc_job_pods, moat_lc_job_pods).
	 */
	lc_job = g->gid.kind == MOAT_GROUP_POD && m->known && m->job &&
		 g->class == MOAT_CLASS_LC && !strncmp(g->class_source, "kube:", 5);
	if (lc_job && !gi->lc_job)
		pr_warn("pod %s/%s: a Job's pod, lc by its QoS tier's class (%s): protected, never throttled; if it is batch work, label it %s=be or add a classes/priority/ rule",
			m->ns, m->name, g->class_source, MOAT_POD_CLASS_LABEL);
	gi->lc_job = lc_job;
}

size_t groups_lc_jobs(const struct moatd *d)
{
	size_t i, n = 0;

	for (i = 0; i < d->nr_groups; i++)
		n += ((const struct group_in *)group_mod(d->groups[i], MOD_GROUPS))->lc_job;
	return n;
}

static int show_lc_jobs(const struct moat_knob *k, char *buf, size_t len)
{
	return snprintf(buf, len, "%zu", groups_lc_jobs(((const struct groups *)k->owner)->d)) >=
	       (int)len ? -EOVERFLOW : 0;
}

void groups_reclassify(struct moatd *d)
{
	struct groups *gs = G(d);
	size_t i;

	rules_activate(gs);
	for (i = 0; i < d->nr_groups; i++) {
		struct moatd_group *g = d->groups[i];
		unsigned int was = g->class;
		char name[MOATD_GROUP_NAME_MAX];

		update_class(gs, g);
		if (g->class == was)
			continue;
		moatd_group_name(g, name, sizeof(name));
		pr_info("group %s: class %s, was %s (%s)", name,
			moat_class_names[g->class], moat_class_names[was],
			g->class_source);
	}
}

static int show_class(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd_group *g = k->owner;

	return snprintf(buf, len, "%s", moat_class_names[g->class]) >= (int)len ?
	       -EOVERFLOW : 0;
}


static void store_class(const struct moat_knob *k, unsigned int choice,
			const char *val)
{
	struct moatd_group *g = k->owner;
	struct groups *gs = ((struct group_in *)group_mod(g, MOD_GROUPS))->gs;
	struct override *o = find_override(gs, g->gid.id);

	if (choice == CLASS_AUTO) {
		if (o)
			*o = gs->overrides[--gs->nr_overrides];
	} else if (o) {
		o->class = choice - 1;
	} else {
		struct override *v = realloc(gs->overrides,
					     (gs->nr_overrides + 1) * sizeof(*v));

		if (!v) {
			pr_err("group %s: class override: out of memory", g->gid.id);
			return;
		}
		gs->overrides = v;
		strcpy(v[gs->nr_overrides].id, g->gid.id);
		v[gs->nr_overrides++].class = choice - 1;
	}
	update_class(gs, g);
	pr_info("group %s: class set to %s (%s)", g->gid.id,
		moat_class_names[g->class], val);
}

static int show_u64(char *buf, size_t len, __u64 v)
{
	return snprintf(buf, len, "%llu", (unsigned long long)v) >= (int)len ?
	       -EOVERFLOW : 0;
}

static int show_cgroup_id(const struct moat_knob *k, char *buf, size_t len)
{
	return show_u64(buf, len, ((const struct moatd_group *)k->owner)->cgid);
}

static int show_path(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd_group *g = k->owner;

	return snprintf(buf, len, "%s", g->path) >= (int)len ? -EOVERFLOW : 0;
}

static const char *const kind_names[] = { "pod", "container", "rule" };

static int show_kind(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd_group *g = k->owner;

	return snprintf(buf, len, "%s", kind_names[g->gid.kind]) >= (int)len ?
	       -EOVERFLOW : 0;
}

static int show_class_source(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd_group *g = k->owner;

	return snprintf(buf, len, "%s", g->class_source) >= (int)len ? -EOVERFLOW : 0;
}

/* Its pod's namespace/name, and /container for a container; "" unknown. */
static int show_name(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd_group *g = k->owner;
	char name[MOATD_GROUP_NAME_MAX];

	if (g->meta.known)
		moatd_group_name(g, name, sizeof(name));
	else
		name[0] = '\0';
	return snprintf(buf, len, "%s", name) >= (int)len ? -EOVERFLOW : 0;
}

static int group_knobs(struct moatd *d, struct moatd_group *g)
{
	const struct moat_knob attrs[] = {
		{ .path = "path", .type = MOAT_KNOB_SHOW, .show = show_path },
		{ .path = "source", .type = MOAT_KNOB_STRING, .data = g->gid.source,
		  .str_max = sizeof(g->gid.source) },
		{ .path = "kind", .type = MOAT_KNOB_SHOW, .show = show_kind },
		{ .path = "class", .type = MOAT_KNOB_CHOICE, .writable = true,
		  .transient = true, .choices = class_choices, .show = show_class,
		  .store = store_class },
		{ .path = "class_source", .type = MOAT_KNOB_SHOW,
		  .show = show_class_source },
		{ .path = "name", .type = MOAT_KNOB_SHOW, .show = show_name },
		{ .path = "cgroup_id", .type = MOAT_KNOB_SHOW, .show = show_cgroup_id },
	};
	char dir[MOAT_KNOB_PATH_MAX];

	snprintf(dir, sizeof(dir), "groups/%s", g->gid.id);
	return moat_knob_add_all(d->tree, dir, attrs,
				 sizeof(attrs) / sizeof(attrs[0]), g);
}

/* ---- groups found and gone ---- */

/* Count a group found or gone; the first few are named in the summary. */
static void churn_note(struct churn *c, const char *id)
{
	if (c->n < CHURN_NAMED)
		snprintf(c->id[c->n], sizeof(c->id[c->n]), "%s", id);
	c->n++;
}

static void churn_words(const struct churn *c, const char *what, char *buf,
			size_t len)
{
	size_t n = snprintf(buf, len, "%zu %s", c->n, what);
	unsigned int i;

	for (i = 0; i < c->n && i < CHURN_NAMED && n < len; i++)
		n += snprintf(buf + n, len - n, "%s%s", i ? ", " : " (", c->id[i]);
	if (c->n && n < len)
		snprintf(buf + n, len - n, "%s)", c->n > CHURN_NAMED ? ", ..." : "");
}

/*
 * One line a rescan for the groups found and gone, not one a group: a
 * node whose pods churn would fill its log (the lines per group are at
 * debug level, -v).
 */
static void churn_say(struct moatd *d, struct groups *gs)
{
	char found[512], gone[512];

	if (!gs->found.n && !gs->gone.n)
		return;
	churn_words(&gs->found, "found", found, sizeof(found));
	churn_words(&gs->gone, "gone", gone, sizeof(gone));
	pr_info("groups: %s, %s; %zu tracked", found, gone, d->nr_groups);
	memset(&gs->found, 0, sizeof(gs->found));
	memset(&gs->gone, 0, sizeof(gs->gone));
}

static void group_free(struct moatd *d, struct moatd_group *g, int upto)
{
	char dir[MOAT_KNOB_PATH_MAX];
	int m;

	for (m = upto; m-- > 0;)
		if (moatd_modules[m]->group_del)
			moatd_modules[m]->group_del(d, g);
	snprintf(dir, sizeof(dir), "groups/%s", g->gid.id);
	moat_knob_remove_dir(d->tree, dir);
	for (m = 0; m < MOD_NR; m++)
		free(g->priv[m]);
	group_meta_free(&g->meta);
	free(g->path);
	free(g->dir);
	free(g);
}

/* @g's path and directory, @path's.  Return: 0 or -errno (then as they were). */
static int group_set_path(struct moatd *d, struct moatd_group *g, const char *path)
{
	char dir[PATH_MAX], *p, *dp;
	int err = moat_cgroup_dir(d->cpu, path, dir, sizeof(dir));

	if (err)
		return err;
	p = strdup(path);
	dp = strdup(dir);
	if (!p || !dp) {
		free(p);
		free(dp);
		return -ENOMEM;
	}
	free(g->path);
	free(g->dir);
	g->path = p;
	g->dir = dp;
	return 0;
}

static void drop_group(struct moatd *d, size_t i, const char *why)
{
	struct moatd_group *g = d->groups[i];

	pr_debug("group %s (%s): %s", g->gid.id, g->path, why);
	churn_note(&G(d)->gone, g->gid.id);
	group_free(d, g, MOD_NR);
	d->groups[i] = d->groups[--d->nr_groups];
	d->groups_gen++;
}

/* The window before any was read: nothing known. */
static const struct group_window no_window = {
	.rqlat_p50_us = NAN, .rqlat_p99_us = NAN, .rqlat_p999_us = NAN,
	.rqlat_wp99_us = NAN, .rqlat_ap99_us = NAN, .cpu_usage = NAN, .throttled_periods = NAN,
	.throttled_ms = NAN, .cpu_pressure_pct = NAN,
	.memory_pressure_pct = NAN, .memory_bytes = NAN, .cpi = NAN,
	.llc_mpki = NAN,
};

static void group_clear(struct moatd_group *g)
{
	unsigned int i;

	g->win = no_window;
	memset(&g->win_hist, 0, sizeof(g->win_hist));
	g->sample = (struct group_sample){
		.cpu_s = NAN, .nr_throttled = NAN, .throttled_s = NAN,
		.cpu_stall_s = NAN, .memory_stall_s = NAN,
		.pmu = { NAN, NAN, NAN },
	};
	for (i = 0; i < GROUP_HISTORY; i++)
		g->history[i] = (struct group_past){ NAN, NAN, NAN, NAN };
}

static int new_group(struct moatd *d, const struct moat_group_id *gid,
		     const char *path, __u64 cgid)
{
	struct moatd_group *g = calloc(1, sizeof(*g));
	int err = 0, m;

	if (!g)
		return -ENOMEM;
	g->gid = *gid;
	g->cgid = cgid;
	g->seen = true;
	g->unit = g;
	group_meta_init(&g->meta);
	group_clear(g);
	err = group_set_path(d, g, path);
	for (m = 0; m < MOD_NR && !err; m++) {
		size_t n = moatd_modules[m]->group_size;

		if (n && !(g->priv[m] = calloc(1, n)))
			err = -ENOMEM;
	}
	if (!err && d->nr_groups == d->cap_groups) {
		size_t cap = d->cap_groups ? d->cap_groups * 2 : 64;
		void *v = realloc(d->groups, cap * sizeof(*d->groups));

		if (v) {
			d->groups = v;
			d->cap_groups = cap;
		} else {
			err = -ENOMEM;
		}
	}
	if (!err) {
		((struct group_in *)g->priv[MOD_GROUPS])->gs = G(d);
		update_class(G(d), g);
		err = group_knobs(d, g);
	}
	for (m = 0; m < MOD_NR && !err; m++)
		if (moatd_modules[m]->group_add)
			err = moatd_modules[m]->group_add(d, g);
	if (err) {
		group_free(d, g, m);
		return err;
	}
	d->groups[d->nr_groups++] = g;
	d->groups_gen++;
	pr_debug("group %s (%s): found, %s %s, class %s", g->gid.id, path,
		 kind_names[gid->kind], gid->source, moat_class_names[g->class]);
	churn_note(&G(d)->found, g->gid.id);
	return 0;
}

/* One cgroup of the walk: a new group, a known one, or none. */
static int rescan_one(__u64 cgid, const char *path, void *ctx)
{
	struct moatd *d = ctx;
	struct groups *gs = G(d);
	const char *rel = path + strlen(d->scan.root);
	struct moat_group_id gid;
	struct moatd_group *g;
	int err, m;

	if (!strcmp(d->scan.root, "/"))
		rel = path;
	if (moat_group_classify(rel, &gs->qos, gs->active[RULES_PATH],
				gs->nr_active[RULES_PATH], &gid))
		return 0;
	g = find_group(d, gid.id);
	if (!g) {
		err = new_group(d, &gid, path, cgid);
		if (err)
			pr_warn("group %s (%s): not tracked: %s", gid.id, path,
				strerror(-err));
		return 0;
	}
	if (g->seen)	/* two cgroups, one id: the first one found wins */
		return 0;
	g->seen = true;
	if (g->cgid != cgid) {	/* the same pod or container, made anew */
		g->cgid = cgid;
		err = group_set_path(d, g, path);
		if (err)
			pr_warn("group %s: made anew at %s, but still known as %s: %s",
				gid.id, path, g->path, strerror(-err));
		d->groups_gen++;
		group_clear(g);
		for (m = 0; m < MOD_NR; m++)
			if (moatd_modules[m]->group_reset)
				moatd_modules[m]->group_reset(d, g);
	}
	g->gid.class = gid.class;
	strcpy(g->gid.source, gid.source);
	update_class(gs, g);
	return 0;
}

static int rescan(struct moatd *d)
{
	struct moat_cgroup_names *names;
	size_t i;
	int err;

	rules_activate(G(d));
	names = moat_cgroup_names_new(&d->scan);
	if (!names)
		return -ENOMEM;
	err = moat_cgroup_names_refresh(names);
	if (err) {
		moat_cgroup_names_free(names);
		return err;
	}
	for (i = 0; i < d->nr_groups; i++)
		d->groups[i]->seen = false;
	moat_cgroup_names_for_each(names, rescan_one, d);
	G(d)->walked_fp = moat_cgroup_names_fingerprint(names);
	G(d)->walked_fp_valid = true;
	G(d)->walks++;
	moat_cgroup_names_free(names);
	for (i = d->nr_groups; i-- > 0;)
		if (!d->groups[i]->seen)
			drop_group(d, i, "gone");
	churn_say(d, G(d));
	return 0;
}

void groups_update(struct moatd *d)
{
	struct groups *gs = G(d);
	__u64 fp;
	int err;

	if (gs->events && !gs->changed && gs->last_rescan.tv_sec) {
		if (ms_since(&gs->last_rescan) < gs->rescan_ms)
			return;
		if (gs->walked_fp_valid && observe_cgroups_fingerprint(d, &fp) &&
		    fp == gs->walked_fp) {
			clock_gettime(CLOCK_MONOTONIC, &gs->last_rescan);
			return;
		}
	}
	gs->changed = false;
	clock_gettime(CLOCK_MONOTONIC, &gs->last_rescan);
	err = rescan(d);
	if (err)
		pr_warn("rescan of %s: %s", d->scan.mnt, strerror(-err));
}

/* ---- cgroup events ---- */

static void note_removed(__u64 id, void *ctx)
{
	struct period *p = &((struct moatd *)ctx)->period;

	if (p->nr_gone == p->cap_gone) {
		size_t cap = p->cap_gone ? p->cap_gone * 2 : 64;
		void *v = realloc(p->gone, cap * sizeof(*p->gone));

		if (!v)
			return;	/* it stays in the rqlat maps until they fill */
		p->gone = v;
		p->cap_gone = cap;
	}
	p->gone[p->nr_gone++] = id;
}

static void note_task(__u64 unit, __u32 tid, void *ctx)
{
	struct groups *gs = G(ctx);

	if (gs->nr_tasks == sizeof(gs->tasks) / sizeof(gs->tasks[0])) {
		gs->tasks_lost = true;
		return;
	}
	gs->tasks[gs->nr_tasks++] = (struct task_event){ unit, tid };
}

bool groups_take_events(struct moatd *d)
{
	struct groups *gs = G(d);

	if (gs->events && moat_cgroup_events_consume(gs->events, note_removed,
						     note_task, d))
		gs->changed = true;
	return gs->nr_tasks > gs->next_task;
}

int groups_events_fd(const struct moatd *d)
{
	return G(d)->events ? moat_cgroup_events_fd(G(d)->events) : -1;
}

bool groups_next_task(struct moatd *d, __u64 *unit, __u32 *tid, bool *lost)
{
	struct groups *gs = G(d);

	*lost = gs->tasks_lost;
	if (gs->next_task == gs->nr_tasks) {
		gs->nr_tasks = gs->next_task = 0;
		gs->tasks_lost = false;
		return false;
	}
	*unit = gs->tasks[gs->next_task].unit;
	*tid = gs->tasks[gs->next_task++].tid;
	return true;
}

int groups_track_tasks(struct moatd *d, const __u64 *units, size_t n)
{
	return G(d)->events ? moat_cgroup_events_track(G(d)->events, units, n) :
			      -EOPNOTSUPP;
}

/* ---- the module ---- */

/* A QoS tier's class changes its pods' classes: walk at the next period. */
static void store_tier_class(const struct moat_knob *k, unsigned int u,
			     const char *val)
{
	struct groups *gs = k->owner;

	*(unsigned int *)k->data = u;
	gs->changed = true;
}

static void store_label_ns(const struct moat_knob *k, unsigned int u, const char *val)
{
	struct groups *gs = k->owner;

	snprintf(gs->label_ns, sizeof(gs->label_ns), "%s", val);
	groups_reclassify(gs->d);
}

static void store_spared_ns(const struct moat_knob *k, unsigned int u, const char *val)
{
	struct groups *gs = k->owner;

	snprintf(gs->spared_ns, sizeof(gs->spared_ns), "%s", val);
	groups_reclassify(gs->d);
}

static int show_rescans(const struct moat_knob *k, char *buf, size_t len)
{
	const struct groups *gs = k->owner;

	return snprintf(buf, len, "%llu", gs->walks) >= (int)len ? -EOVERFLOW : 0;
}

/* Where moatd looks for groups: the cpu hierarchy's root or --cgroup-root. */
static int show_cgroup_root(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd *d = k->owner;

	return snprintf(buf, len, "%s", d->scan.root) >= (int)len ? -EOVERFLOW : 0;
}

static int groups_init(struct moatd *d)
{
	struct groups *gs = G(d);
	const struct moat_knob root = {
		.path = "cgroup_root", .type = MOAT_KNOB_SHOW, .show = show_cgroup_root,
		.owner = d,
	};
	const struct moat_knob knobs[] = {
		{ .path = "rescan_ms", .type = MOAT_KNOB_U32, .writable = true,
		  .min = 1000, .max = 3600000, .data = &gs->rescan_ms },
		{ .path = "rescans", .type = MOAT_KNOB_SHOW, .show = show_rescans },
		{ .path = "classes/guaranteed", .type = MOAT_KNOB_CHOICE,
		  .writable = true, .choices = moat_class_names,
		  .data = &gs->qos.guaranteed, .store = store_tier_class },
		{ .path = "classes/burstable", .type = MOAT_KNOB_CHOICE,
		  .writable = true, .choices = moat_class_names,
		  .data = &gs->qos.burstable, .store = store_tier_class },
		{ .path = "classes/besteffort", .type = MOAT_KNOB_CHOICE,
		  .writable = true, .choices = moat_class_names,
		  .data = &gs->qos.besteffort, .store = store_tier_class },
		{ .path = "classes/label_namespaces", .type = MOAT_KNOB_STRING,
		  .writable = true, .data = gs->label_ns, .str_max = sizeof(gs->label_ns),
		  .check = moat_knob_check_names, .store = store_label_ns,
		  .expects = "namespaces where moat.io/class may raise a class, one space between, or *; '' none" },
		{ .path = "classes/lc_job_pods", .type = MOAT_KNOB_SHOW, .show = show_lc_jobs },
		{ .path = "classes/spared_namespaces", .type = MOAT_KNOB_STRING,
		  .writable = true, .data = gs->spared_ns, .str_max = sizeof(gs->spared_ns),
		  .check = moat_knob_check_names, .store = store_spared_ns,
		  .expects = "namespaces whose pods are never BE, one space between, or *; '' none" },
	};
	int err;

	gs->d = d;
	gs->rescan_ms = 10000;
	snprintf(gs->spared_ns, sizeof(gs->spared_ns), "kube-system");
	gs->qos = (struct moat_qos_classes){ MOAT_CLASS_LC, MOAT_CLASS_LC,
					     MOAT_CLASS_BE };
	err = moat_knob_add_all(d->tree, "", knobs,
				sizeof(knobs) / sizeof(knobs[0]), gs);
	if (!err)
		err = moat_knob_add(d->tree, &root);
	/* there, if empty: ls rules says no rules, not no such knob */
	if (!err)
		err = moat_knob_add_dir(d->tree, "rules");
	if (!err)
		err = moat_knob_add_dir(d->tree, "classes/priority");
	if (!err)
		err = moat_knob_add_dir(d->tree, "classes/namespace");
	if (!err)
		err = moat_knob_add_dir(d->tree, "groups");
	return err;
}

static int groups_open(struct moatd *d)
{
	char path[PATH_MAX];
	__u64 root = 0;

	/* its events only; where the id cannot be had, the whole hierarchy's */
	if (moat_cgroup_resolve(d->cpu, d->scan.mnt, path, sizeof(path), &root))
		root = 0;
	moat_cgroup_events_open(root, &G(d)->events);	/* optional: says why not */
	return 0;
}

static void groups_close(struct moatd *d)
{
	struct groups *gs = G(d);

	while (d->nr_groups)
		drop_group(d, d->nr_groups - 1, "no longer tracked: moatd stops");
	memset(&gs->found, 0, sizeof(gs->found));
	memset(&gs->gone, 0, sizeof(gs->gone));
	free(d->groups);
	d->groups = NULL;
	d->cap_groups = 0;
	free(gs->overrides);
	moat_cgroup_events_close(gs->events);
	gs->events = NULL;
}

const struct moatd_module groups_module = {
	.name = "groups",
	.size = sizeof(struct groups),
	.group_size = sizeof(struct group_in),
	.init = groups_init,
	.open = groups_open,
	.close = groups_close,
};
