// SPDX-License-Identifier: GPL-2.0-only
/* Which cgroups are groups, their ids and their classes. */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
#include "group.h"

const char *const moat_class_names[] = { "none", "lc", "be", NULL };

static int class_of(const char *name, enum moat_class *out)
{
	unsigned int i;

	for (i = 0; moat_class_names[i]; i++) {
		if (!strcmp(name, moat_class_names[i])) {
			*out = i;
			return 0;
		}
	}
	return -EINVAL;
}

int moat_rule_parse(const char *name, const char *value, struct moat_rule *out)
{
	char glob[MOAT_GLOB_MAX], *comp, *save;
	const char *sp = strrchr(value, ' ');
	size_t n;

	if (!moat_id_valid(name) || !sp || sp == value)
		return -EINVAL;
	n = sp - value;
	if (n >= sizeof(out->glob) || class_of(sp + 1, &out->class))
		return -EINVAL;
	memcpy(out->glob, value, n);
	out->glob[n] = '\0';
	if (out->glob[0] == '/' || strchr(out->glob, ' ') || strstr(out->glob, "//"))
		return -EINVAL;
	strcpy(glob, out->glob);
	for (comp = strtok_r(glob, "/", &save); comp;
	     comp = strtok_r(NULL, "/", &save))
		if (!strcmp(comp, ".") || !strcmp(comp, ".."))
			return -EINVAL;
	strcpy(out->name, name);
	return 0;
}

/* @rule's name, '.', and @path's last component made a valid id. */
static void rule_id(const struct moat_rule *rule, const char *path, char *id)
{
	const char *base = strrchr(path, '/');
	size_t n, i;

	n = snprintf(id, MOAT_ID_MAX, "%s.%s", rule->name, base ? base + 1 : path);
	if (n >= MOAT_ID_MAX)
		n = MOAT_ID_MAX - 1;
	id[n] = '\0';
	for (i = strlen(rule->name) + 1; i < n; i++)
		if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			    "0123456789._-", id[i]))
			id[i] = '_';
}

static const struct moat_rule *match_rule(const char *path,
					  const struct moat_rule *rules,
					  size_t nr_rules)
{
	const char *rel = path;
	size_t i;

	while (*rel == '/')
		rel++;
	if (!*rel)	/* the root is the node, never a group */
		return NULL;
	for (i = 0; i < nr_rules; i++)
		if (!fnmatch(rules[i].glob, rel, FNM_PATHNAME))
			return &rules[i];
	return NULL;
}

int moat_group_classify(const char *path, const struct moat_qos_classes *qos,
			const struct moat_rule *rules, size_t nr_rules,
			struct moat_group_id *out)
{
	const struct moat_rule *rule = match_rule(path, rules, nr_rules);
	struct moat_kube_path *k = &out->kube;
	bool kube;

	memset(out, 0, sizeof(*out));
	kube = !moat_kube_parse_path(path, k);
	/*
	 * kubelet's own cgroups, kubepods and its QoS tiers, are never
	 * groups, whatever rule matches them: kubelet rewrites them every
	 * minute, and a weight or cpu.idle there is how an agent breaks it
	 * (koordinator issue 2732).
	 */
	if (kube && k->level < MOAT_KUBE_POD)
		return -ENOENT;
	/* Cgroups a container makes inside its own are part of it, not groups. */
	if (kube && k->level == MOAT_KUBE_CONTAINER &&
	    !strstr(strrchr(path, '/'), k->container_id))
		return -ENOENT;
	if (!kube && !rule)
		return -ENOENT;

	if (kube) {
		out->kind = k->level == MOAT_KUBE_POD ? MOAT_GROUP_POD :
							MOAT_GROUP_CONTAINER;
		strcpy(out->id, out->kind == MOAT_GROUP_POD ? k->pod_uid :
							      k->container_id);
		switch (k->qos) {
		case MOAT_KUBE_GUARANTEED:
			out->class = qos->guaranteed;
			break;
		case MOAT_KUBE_BURSTABLE:
			out->class = qos->burstable;
			break;
		case MOAT_KUBE_BESTEFFORT:
			out->class = qos->besteffort;
			break;
		}
		snprintf(out->source, sizeof(out->source), "kube:%s",
			 moat_kube_qos_name(k->qos));
	} else {
		out->kind = MOAT_GROUP_RULE;
		rule_id(rule, path, out->id);
	}
	if (rule) {
		out->class = rule->class;
		snprintf(out->source, sizeof(out->source), "rule:%s", rule->name);
	}
	return 0;
}
