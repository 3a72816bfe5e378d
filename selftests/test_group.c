// SPDX-License-Identifier: GPL-2.0-only
/* Groups: kubepods classification for both drivers, rules, ids. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <criterion/criterion.h>
#include "group.h"
#include "helpers.h"

static const struct moat_qos_classes qos = {
	.guaranteed = MOAT_CLASS_LC,
	.burstable = MOAT_CLASS_LC,
	.besteffort = MOAT_CLASS_BE,
};

static struct moat_rule rules[3];

static void setup(void)
{
	cr_assert_eq(moat_rule_parse("web", "system.slice/nginx.service lc", &rules[0]), 0);
	cr_assert_eq(moat_rule_parse("etl", "system.slice/batch@*.service be", &rules[1]), 0);
	cr_assert_eq(moat_rule_parse("vip", "kubepods.slice/kubepods-besteffort.slice/"
				     "kubepods-besteffort-podffffffff_0000_1111_2222_333333333333.slice lc",
				     &rules[2]), 0);
}

TestSuite(group, .init = setup);

static const char *const kinds[] = { "pod", "container", "rule" };

/*
 * Each fixture line is a cgroup path, then optionally " | kind id class
 * source": the group it must be.  Lines without one must not be groups.
 */
static void check_tree(const char *fixture)
{
	char line[1024], kind[16], id[MOAT_ID_MAX], class[8], source[128];
	struct moat_group_id g;
	unsigned int lineno = 0, groups = 0;
	FILE *f = fixture_open(fixture);

	cr_assert_not_null(f, "fixture %s", fixture);
	while (fgets(line, sizeof(line), f)) {
		char *bar = strstr(line, " | ");
		int ret;

		lineno++;
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '#')
			continue;
		if (bar)
			*bar = '\0';
		ret = moat_group_classify(line, &qos, rules, 3, &g);
		if (!bar) {
			cr_expect_eq(ret, -ENOENT, "%s:%u: %s is not a group, got %s",
				     fixture, lineno, line, g.id);
			continue;
		}
		cr_assert_eq(sscanf(bar + 3, "%15s %79s %7s %127s", kind, id,
				    class, source), 4, "%s:%u", fixture, lineno);
		groups++;
		cr_expect_eq(ret, 0, "%s:%u: %s should be a group", fixture,
			     lineno, line);
		if (ret)
			continue;
		cr_expect_str_eq(kinds[g.kind], kind, "%s:%u", fixture, lineno);
		cr_expect_str_eq(g.id, id, "%s:%u", fixture, lineno);
		cr_expect_str_eq(moat_class_names[g.class], class, "%s:%u",
				 fixture, lineno);
		cr_expect_str_eq(g.source, source, "%s:%u", fixture, lineno);
		cr_expect(moat_id_valid(g.id), "%s:%u: id %s", fixture, lineno, g.id);
	}
	fclose(f);
	cr_expect_geq(groups, 5, "%s: too few groups checked", fixture);
}

Test(group, systemd_driver_tree)
{
	check_tree("tree-systemd");
}

Test(group, cgroupfs_driver_tree)
{
	check_tree("tree-cgroupfs");
}

Test(group, qos_tier_defaults_are_knobs)
{
	struct moat_qos_classes all_be = { MOAT_CLASS_BE, MOAT_CLASS_BE, MOAT_CLASS_NONE };
	struct moat_group_id g;

	cr_assert_eq(moat_group_classify("/kubepods/burstable/pod11111111-2222-3333-4444-555555555555",
					 &all_be, NULL, 0, &g), 0);
	cr_expect_eq(g.class, MOAT_CLASS_BE);
	cr_assert_eq(moat_group_classify("/kubepods/besteffort/podaaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
					 &all_be, NULL, 0, &g), 0);
	cr_expect_eq(g.class, MOAT_CLASS_NONE);
}

Test(group, rule_values)
{
	struct moat_rule r;

	cr_expect_eq(moat_rule_parse("r", "a/*/b be", &r), 0);
	cr_expect_str_eq(r.glob, "a/*/b");
	cr_expect_eq(r.class, MOAT_CLASS_BE);
	cr_expect_eq(moat_rule_parse("r", "a/b", &r), -EINVAL);		/* no class */
	cr_expect_eq(moat_rule_parse("r", "a/b gold", &r), -EINVAL);	/* bad class */
	cr_expect_eq(moat_rule_parse("r", " lc", &r), -EINVAL);		/* no glob */
	cr_expect_eq(moat_rule_parse("r", "/abs lc", &r), -EINVAL);
	cr_expect_eq(moat_rule_parse("r", "a/../../etc lc", &r), -EINVAL);
	cr_expect_eq(moat_rule_parse("r", "a//b lc", &r), -EINVAL);
	cr_expect_eq(moat_rule_parse("r", "a b lc", &r), -EINVAL);
	cr_expect_eq(moat_rule_parse("../x", "a lc", &r), -EINVAL);	/* bad name */
}

/* kubepods and its QoS tiers are kubelet's: no rule makes them a group */
Test(group, rules_never_match_kubelets_own_cgroups)
{
	static const char *const kubelets[] = {
		"/kubepods", "/kubepods/burstable", "/kubepods/besteffort",
		"/kubepods.slice", "/kubepods.slice/kubepods-burstable.slice",
		"/kubepods.slice/kubepods-besteffort.slice",
	};
	struct moat_rule r[3];
	struct moat_group_id g;
	size_t i;

	cr_assert_eq(moat_rule_parse("a", "kubepods* be", &r[0]), 0);
	cr_assert_eq(moat_rule_parse("b", "kubepods/* be", &r[1]), 0);
	cr_assert_eq(moat_rule_parse("c", "kubepods.slice/* be", &r[2]), 0);
	for (i = 0; i < sizeof(kubelets) / sizeof(kubelets[0]); i++)
		cr_expect_eq(moat_group_classify(kubelets[i], &qos, r, 3, &g), -ENOENT,
			     "%s is a group (%s)", kubelets[i], g.source);
	/* a pod below still is one, its tier's class or the rule's */
	cr_expect_eq(moat_group_classify("/kubepods/besteffort/podaaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee",
					 &qos, r, 3, &g), 0);
}

Test(group, rules_never_match_the_root)
{
	struct moat_rule star;
	struct moat_group_id g;

	cr_assert_eq(moat_rule_parse("all", "* be", &star), 0);
	cr_expect_eq(moat_group_classify("/", &qos, &star, 1, &g), -ENOENT);
	cr_expect_eq(moat_group_classify("/x", &qos, &star, 1, &g), 0);
	cr_expect_str_eq(g.id, "all.x");
	/* FNM_PATHNAME: '*' stays within one component */
	cr_expect_eq(moat_group_classify("/x/y", &qos, &star, 1, &g), -ENOENT);
}
