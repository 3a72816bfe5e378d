/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_GROUP_H
#define MOAT_GROUP_H

#include <stddef.h>
#include "knob.h"
#include "kubepath.h"

/*
 * Groups: the cgroups moatd tracks, each with a class.  A cgroup is a
 * group when it is a Kubernetes pod or container (either kubelet cgroup
 * driver), or when a static rule's glob matches its path.
 */

enum moat_class {
	MOAT_CLASS_NONE,	/* observed only */
	MOAT_CLASS_LC,		/* latency-critical: protected */
	MOAT_CLASS_BE,		/* best-effort: may be throttled */
};

extern const char *const moat_class_names[];	/* "none", "lc", "be", NULL */

/* Class of each QoS tier's pods: the classes/<tier> knobs. */
struct moat_qos_classes {
	unsigned int guaranteed, burstable, besteffort;	/* enum moat_class */
};

#define MOAT_GLOB_MAX 256

/* A static rule: rules/<name> = "<glob> <class>". */
struct moat_rule {
	char name[MOAT_ID_MAX];
	char glob[MOAT_GLOB_MAX];	/* fnmatch(3) pattern, FNM_PATHNAME */
	enum moat_class class;
};

enum moat_group_kind {
	MOAT_GROUP_POD,
	MOAT_GROUP_CONTAINER,
	MOAT_GROUP_RULE,
};

struct moat_group_id {
	char id[MOAT_ID_MAX];	/* pod UID, container id, or from the rule */
	enum moat_group_kind kind;
	enum moat_class class;
	char source[MOAT_ID_MAX + 16];	/* "kube:besteffort", "rule:web" */
	struct moat_kube_path kube;	/* pods and containers */
};

/**
 * moat_rule_parse() - parse a rule's value, "<glob> <class>".  The glob is
 * relative to the cgroup root: no leading '/', no "." or ".." component.
 *
 * Return: 0, or -EINVAL.
 */
int moat_rule_parse(const char *name, const char *value, struct moat_rule *out);

/**
 * moat_group_classify() - whether the cgroup at hierarchy path @path is a
 * group, and which.  Rules are tried in order and win over the QoS tier,
 * so a rule can reclassify pods; a container takes its pod's class.
 *
 * Return: 0, -ENOENT when it is not a group.
 */
int moat_group_classify(const char *path, const struct moat_qos_classes *qos,
			const struct moat_rule *rules, size_t nr_rules,
			struct moat_group_id *out);

#endif /* MOAT_GROUP_H */
