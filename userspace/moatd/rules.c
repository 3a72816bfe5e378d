// SPDX-License-Identifier: GPL-2.0-only
/*
 * Static rules, rules/<name> = "<glob> <class>": created by the config
 * file or by moatctl set, removed by setting them to "".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "log.h"
#include "moatd.h"

static int rule_check(const struct moat_knob *k, const char *val, char *why,
		      size_t len)
{
	struct rule_slot *slot = k->owner;
	struct moat_rule r;

	if (!*val)
		return 0;
	return moat_rule_parse(slot->rule.name, val, &r);
}

static void rule_store(const struct moat_knob *k, unsigned int u,
		       const char *val)
{
	struct rule_slot *slot = k->owner;
	struct moat_rule r;

	if (!*val) {
		/* Only the slot: the knob goes with rules_remove(). */
		slot->text[0] = '\0';
		return;
	}
	/* (not into slot->rule: its name is the name parsed from) */
	moat_rule_parse(slot->rule.name, val, &r);
	slot->rule = r;
	strcpy(slot->text, val);
}

int rules_create(struct moatd *d, const char *name)
{
	struct moat_knob k = {
		.type = MOAT_KNOB_STRING, .writable = true,
		.str_max = MOAT_KNOB_VALUE_MAX, .check = rule_check,
		.store = rule_store,
		.expects = "'<glob> <class>': a glob relative to the cgroup root, "
			   "without '..', and none, lc or be; '' removes the rule",
	};
	struct rule_slot *slot = NULL;
	size_t i;
	int err;

	if (!moat_id_valid(name))
		return -EINVAL;
	for (i = 0; i < MOATD_MAX_RULES && !slot; i++)
		if (!d->rules[i].used)
			slot = &d->rules[i];
	if (!slot)
		return -E2BIG;
	snprintf(k.path, sizeof(k.path), "rules/%s", name);
	k.data = slot->text;
	k.owner = slot;
	memset(slot, 0, sizeof(*slot));
	strcpy(slot->rule.name, name);
	err = moat_knob_add(d->tree, &k);
	if (!err)
		slot->used = true;
	return err;
}

void rules_remove(struct moatd *d, const char *name)
{
	char path[MOAT_KNOB_PATH_MAX];
	size_t i;

	for (i = 0; i < MOATD_MAX_RULES; i++) {
		if (d->rules[i].used && !strcmp(d->rules[i].rule.name, name)) {
			d->rules[i].used = false;
			snprintf(path, sizeof(path), "rules/%s", name);
			moat_knob_remove_dir(d->tree, path);
		}
	}
}

static int cmp_rule(const void *a, const void *b)
{
	const struct moat_rule *x = a, *y = b;

	return strcmp(x->name, y->name);
}

void rules_activate(struct moatd *d)
{
	size_t i;

	d->nr_active_rules = 0;
	for (i = 0; i < MOATD_MAX_RULES; i++)
		if (d->rules[i].used && d->rules[i].text[0])
			d->active_rules[d->nr_active_rules++] = d->rules[i].rule;
	qsort(d->active_rules, d->nr_active_rules, sizeof(struct moat_rule),
	      cmp_rule);
}
