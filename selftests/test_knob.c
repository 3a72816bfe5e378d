// SPDX-License-Identifier: GPL-2.0-only
/* The knob tree: types, ranges, sysfs-like errors, ids and paths. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <criterion/criterion.h>
#include "knob.h"

static const char *const modes[] = { "observe", "enforce", NULL };
static unsigned int period = 500, mode;
static char label[32] = "web";

static int show_answer(const struct moat_knob *k, char *buf, size_t len)
{
	return snprintf(buf, len, "42") >= (int)len ? -EOVERFLOW : 0;
}

static int no_spaces(const struct moat_knob *k, const char *val, char *why,
		     size_t len)
{
	const char *sp = strchr(val, ' ');

	if (sp)
		snprintf(why, len, "a space at %td", sp - val);
	return sp ? -EINVAL : 0;
}

static struct moat_knob_tree *t;

static void setup(void)
{
	struct moat_knob knobs[] = {
		{ .path = "period_ms", .type = MOAT_KNOB_U32, .writable = true,
		  .min = 10, .max = 60000, .data = &period },
		{ .path = "mode", .type = MOAT_KNOB_CHOICE, .writable = true,
		  .choices = modes, .data = &mode },
		{ .path = "groups/pod-a/label", .type = MOAT_KNOB_STRING,
		  .writable = true, .str_max = sizeof(label), .check = no_spaces,
		  .data = label },
		{ .path = "groups/pod-a/answer", .type = MOAT_KNOB_SHOW,
		  .show = show_answer },
		{ .path = "groups/pod-b/answer", .type = MOAT_KNOB_SHOW,
		  .show = show_answer },
		{ .path = "version", .type = MOAT_KNOB_SHOW, .show = show_answer },
	};
	unsigned int i;

	period = 500;
	mode = 0;
	strcpy(label, "web");
	t = moat_knob_tree_new();
	cr_assert_not_null(t);
	for (i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++)
		cr_assert_eq(moat_knob_add(t, &knobs[i]), 0, "%s", knobs[i].path);
}

static void teardown(void)
{
	moat_knob_tree_free(t);
}

TestSuite(knob, .init = setup, .fini = teardown);

static const char *get(const char *path)
{
	static char buf[MOAT_KNOB_VALUE_MAX];

	cr_assert_eq(moat_knob_get(t, path, buf, sizeof(buf)), 0, "get %s", path);
	return buf;
}

Test(knob, get_each_type)
{
	cr_expect_str_eq(get("period_ms"), "500");
	cr_expect_str_eq(get("mode"), "observe");
	cr_expect_str_eq(get("groups/pod-a/label"), "web");
	cr_expect_str_eq(get("groups/pod-a/answer"), "42");
}

Test(knob, set_valid_values)
{
	cr_assert_eq(moat_knob_set(t, "period_ms", "10"), 0);
	cr_expect_eq(period, 10);
	cr_assert_eq(moat_knob_set(t, "period_ms", "60000"), 0);
	cr_expect_eq(period, 60000);
	cr_assert_eq(moat_knob_set(t, "mode", "enforce"), 0);
	cr_expect_eq(mode, 1);
	cr_assert_eq(moat_knob_set(t, "groups/pod-a/label", "cache"), 0);
	cr_expect_str_eq(label, "cache");
}

/* Every rejected write leaves the value as it was. */
Test(knob, bad_writes_change_nothing)
{
	static const char *const bad_u32[] = {
		"", "9", "60001", "-1", "+5", " 500", "500 ", "5e2", "0x10",
		"99999999999999999999", "12abc",
	};
	unsigned int i;

	for (i = 0; i < sizeof(bad_u32) / sizeof(bad_u32[0]); i++) {
		cr_expect_eq(moat_knob_set(t, "period_ms", bad_u32[i]), -EINVAL,
			     "'%s'", bad_u32[i]);
		cr_expect_eq(period, 500);
	}
	cr_expect_eq(moat_knob_set(t, "mode", "Enforce"), -EINVAL);
	cr_expect_eq(moat_knob_set(t, "mode", ""), -EINVAL);
	cr_expect_eq(mode, 0);
	cr_expect_eq(moat_knob_set(t, "groups/pod-a/label", "two words"), -EINVAL);
	/* the knob's own check says why; type, length and range say nothing */
	{
		char why[64] = "stale";

		cr_expect_eq(moat_knob_check_why(t, "groups/pod-a/label",
						 "two words", why, sizeof(why)),
			     -EINVAL);
		cr_expect_str_eq(why, "a space at 3");
		cr_expect_eq(moat_knob_check_why(t, "period_ms", "9", why,
						 sizeof(why)), -EINVAL);
		cr_expect_str_eq(why, "");
		cr_expect_eq(moat_knob_check_why(t, "groups/pod-a/label",
						 "one", why, sizeof(why)), 0);
		cr_expect_str_eq(why, "");
	}
	cr_expect_eq(moat_knob_set(t, "groups/pod-a/label",
				   "0123456789012345678901234567890123456789"),
		     -EINVAL);
	cr_expect_eq(moat_knob_set(t, "groups/pod-a/label", "line\nbreak"),
		     -EINVAL);
	/* bytes above ASCII only as well-formed UTF-8 */
	cr_expect_eq(moat_knob_set(t, "groups/pod-a/label", "a\xff"), -EINVAL);
	cr_expect_eq(moat_knob_set(t, "groups/pod-a/label", "\xc0\xaf"), -EINVAL,
		     "an overlong '/'");
	cr_expect_eq(moat_knob_set(t, "groups/pod-a/label", "\xed\xa0\x80"), -EINVAL,
		     "a surrogate");
	cr_expect_eq(moat_knob_set(t, "groups/pod-a/label", "\xc2\x85"), -EINVAL,
		     "a C1 control");
	cr_expect_eq(moat_knob_set(t, "groups/pod-a/label", "\xe2\x82"), -EINVAL,
		     "cut short");
	cr_expect_str_eq(label, "web");
	cr_expect_eq(moat_knob_set(t, "groups/pod-a/label", "caf\xc3\xa9-\xe2\x82\xac"), 0);
	cr_expect_str_eq(label, "caf\xc3\xa9-\xe2\x82\xac");
}

Test(knob, sysfs_errors)
{
	char buf[64];

	cr_expect_eq(moat_knob_set(t, "nosuch", "1"), -ENOENT);
	cr_expect_eq(moat_knob_get(t, "nosuch", buf, sizeof(buf)), -ENOENT);
	cr_expect_eq(moat_knob_set(t, "version", "2"), -EPERM);
	cr_expect_eq(moat_knob_set(t, "groups/pod-a/answer", "1"), -EPERM);
	/* A directory is not a knob. */
	cr_expect_eq(moat_knob_set(t, "groups", "1"), -ENOENT);
	cr_expect_eq(moat_knob_check(t, "period_ms", "20"), 0);
	cr_expect_eq(period, 500, "check changed the value");
}

Test(knob, paths_cannot_escape_or_collide)
{
	struct moat_knob k = { .type = MOAT_KNOB_SHOW, .show = show_answer };
	static const char *const bad[] = {
		"", "/abs", "a//b", "a/", "..", "a/../b", "a/./b", ".",
		"a b", "a\\b", "tab\there", "nl\nx", "x/\x7f",
	};
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		strcpy(k.path, bad[i]);
		cr_expect_eq(moat_knob_add(t, &k), -EINVAL, "'%s'", bad[i]);
	}
	/* A leaf cannot become a directory, nor a directory a leaf. */
	strcpy(k.path, "period_ms/x");
	cr_expect_eq(moat_knob_add(t, &k), -EEXIST);
	strcpy(k.path, "groups/pod-a");
	cr_expect_eq(moat_knob_add(t, &k), -EEXIST);
	strcpy(k.path, "mode");
	cr_expect_eq(moat_knob_add(t, &k), -EEXIST);
}

Test(knob, ids)
{
	cr_expect(moat_id_valid("0a1b2c3d-4e5f-6789-abcd-ef0123456789"));
	cr_expect(moat_id_valid("rule.nginx_1"));
	cr_expect_not(moat_id_valid(""));
	cr_expect_not(moat_id_valid("."));
	cr_expect_not(moat_id_valid(".."));
	cr_expect_not(moat_id_valid("a/b"));
	cr_expect_not(moat_id_valid("a\x01"));
	cr_expect_not(moat_id_valid("caf\xc3\xa9"));
	cr_expect_not(moat_id_valid(
		"0123456789012345678901234567890123456789"
		"0123456789012345678901234567890123456789"));
}

struct names {
	char buf[256];
};

static int collect(const char *name, bool dir, void *ctx)
{
	struct names *n = ctx;

	strcat(n->buf, name);
	strcat(n->buf, dir ? "/ " : " ");
	return 0;
}

static int count(const struct moat_knob *k, void *ctx)
{
	(*(int *)ctx)++;
	return 0;
}

Test(knob, ls_walk_remove)
{
	struct names n = {};
	int c = 0;

	cr_assert_eq(moat_knob_ls(t, "", collect, &n), 0);
	cr_expect_str_eq(n.buf, "groups/ mode period_ms version ");
	memset(&n, 0, sizeof(n));
	cr_assert_eq(moat_knob_ls(t, "groups", collect, &n), 0);
	cr_expect_str_eq(n.buf, "pod-a/ pod-b/ ");
	cr_expect_eq(moat_knob_ls(t, "nosuch", collect, &n), -ENOENT);
	cr_expect_eq(moat_knob_ls(t, "mode", collect, &n), -ENOTDIR);
	/* a directory made to be there, empty or not */
	cr_assert_eq(moat_knob_add_dir(t, "rules"), 0);
	cr_assert_eq(moat_knob_add_dir(t, "groups"), 0);
	memset(&n, 0, sizeof(n));
	cr_assert_eq(moat_knob_ls(t, "rules", collect, &n), 0);
	cr_expect_str_eq(n.buf, "");
	cr_assert_eq(moat_knob_ls(t, "", collect, &n), 0);
	cr_expect_str_eq(n.buf, "groups/ mode period_ms rules/ version ");
	memset(&n, 0, sizeof(n));
	cr_assert_eq(moat_knob_ls(t, "groups", collect, &n), 0);
	cr_expect_str_eq(n.buf, "pod-a/ pod-b/ ");

	cr_assert_eq(moat_knob_walk(t, "groups/pod-a", count, &c), 0);
	cr_expect_eq(c, 2);
	/* "groups/pod-a" is not a prefix of "groups/pod-ab" */
	c = 0;
	cr_assert_eq(moat_knob_walk(t, "groups/pod", count, &c), -ENOENT);

	moat_knob_remove_dir(t, "groups/pod-a");
	cr_expect_null(moat_knob_find(t, "groups/pod-a/label"));
	cr_expect_not_null(moat_knob_find(t, "groups/pod-b/answer"));
	c = 0;
	cr_assert_eq(moat_knob_walk(t, "", count, &c), 0);
	cr_expect_eq(c, 4);
}

Test(knob, expects_describes_the_knob)
{
	char buf[128];

	moat_knob_expects(moat_knob_find(t, "period_ms"), buf, sizeof(buf));
	cr_expect_str_eq(buf, "an integer in [10, 60000]");
	moat_knob_expects(moat_knob_find(t, "mode"), buf, sizeof(buf));
	cr_expect_str_eq(buf, "one of observe, enforce");
	moat_knob_expects(moat_knob_find(t, "version"), buf, sizeof(buf));
	cr_expect_str_eq(buf, "read-only");
}

Test(knob, add_all_prefixes_and_owns)
{
	static int owner;
	const struct moat_knob tmpl[] = {
		{ .path = "a", .type = MOAT_KNOB_SHOW, .show = show_answer },
		{ .path = "b/c", .type = MOAT_KNOB_SHOW, .show = show_answer },
	};
	char longdir[MOAT_KNOB_PATH_MAX];

	cr_assert_eq(moat_knob_add_all(t, "groups/pod-c", tmpl, 2, &owner), 0);
	cr_expect_eq(moat_knob_find(t, "groups/pod-c/a")->owner, &owner);
	cr_expect_not_null(moat_knob_find(t, "groups/pod-c/b/c"));
	cr_assert_eq(moat_knob_add_all(t, "", tmpl, 1, &owner), 0);
	cr_expect_not_null(moat_knob_find(t, "a"));
	memset(longdir, 'x', sizeof(longdir) - 2);
	longdir[sizeof(longdir) - 2] = '\0';
	cr_expect_eq(moat_knob_add_all(t, longdir, tmpl, 1, &owner), -ENAMETOOLONG);
}

static int path_order(const struct moat_knob *k, void *ctx)
{
	char *buf = ctx;

	strcat(buf, k->path);
	strcat(buf, " ");
	return 0;
}

/*
 * The tree keeps a knob as shared parts (its head, its directory) and its
 * own owner and data: many directories of the same knobs each read and
 * write their own values, a knob of the same name but another kind stays
 * what it is, and removing a directory leaves the others whole.
 */
Test(knob, knobs_of_many_directories_keep_their_own_values)
{
	static unsigned int v[300];
	static int owners[300];
	char path[64], buf[MOAT_KNOB_VALUE_MAX], order[1024] = "";
	struct moat_knob k = { .type = MOAT_KNOB_U32, .writable = true, .max = 1000 };
	struct moat_knob s = { .type = MOAT_KNOB_SHOW, .show = show_answer };
	unsigned int i;

	for (i = 0; i < 300; i++) {
		v[i] = i;
		k.data = &v[i];
		k.owner = &owners[i];
		snprintf(k.path, sizeof(k.path), "groups/g%u/weight", i);
		cr_assert_eq(moat_knob_add(t, &k), 0);
	}
	/* the same leaf name, another kind: not the shared head */
	snprintf(s.path, sizeof(s.path), "other/weight");
	cr_assert_eq(moat_knob_add(t, &s), 0);
	cr_expect_str_eq(get("other/weight"), "42");
	cr_expect_eq(moat_knob_set(t, "other/weight", "1"), -EPERM);
	for (i = 0; i < 300; i += 7) {
		snprintf(path, sizeof(path), "groups/g%u/weight", i);
		snprintf(buf, sizeof(buf), "%u", i);
		cr_expect_str_eq(get(path), buf);
		cr_expect_eq(moat_knob_find(t, path)->owner, &owners[i]);
		cr_expect_str_eq(moat_knob_find(t, path)->path, path);
		snprintf(buf, sizeof(buf), "%u", 1000 - i);
		cr_assert_eq(moat_knob_set(t, path, buf), 0);
		cr_expect_eq(v[i], 1000 - i);
	}
	cr_expect_eq(v[1], 1);
	moat_knob_remove_dir(t, "groups/g10");
	cr_expect_null(moat_knob_find(t, "groups/g10/weight"));
	cr_expect_not_null(moat_knob_find(t, "groups/g100/weight"));
	cr_expect_str_eq(get("groups/g11/weight"), "11");
	/* and back, as a group that returns */
	k.data = &v[10];
	snprintf(k.path, sizeof(k.path), "groups/g10/weight");
	cr_assert_eq(moat_knob_add(t, &k), 0);
	cr_expect_str_eq(get("groups/g10/weight"), "10");
	/* path order is byte order of the whole path, '-' and '.' before '/' */
	cr_assert_eq(moat_knob_add_dir(t, "x"), 0);
	snprintf(k.path, sizeof(k.path), "x/a/z");
	cr_assert_eq(moat_knob_add(t, &k), 0);
	snprintf(k.path, sizeof(k.path), "x/a-b");
	cr_assert_eq(moat_knob_add(t, &k), 0);
	snprintf(k.path, sizeof(k.path), "x/a.c/y");
	cr_assert_eq(moat_knob_add(t, &k), 0);
	snprintf(k.path, sizeof(k.path), "x/a");
	cr_expect_eq(moat_knob_add(t, &k), -EEXIST);
	snprintf(k.path, sizeof(k.path), "x/a/z/w");
	cr_expect_eq(moat_knob_add(t, &k), -EEXIST);
	cr_assert_eq(moat_knob_walk(t, "x", path_order, order), 0);
	cr_expect_str_eq(order, "x/a-b x/a.c/y x/a/z ");
	moat_knob_remove_dir(t, "groups");
	moat_knob_remove_dir(t, "x");
	cr_expect_null(moat_knob_find(t, "groups/g1/weight"));
	cr_expect_str_eq(get("version"), "42");
}
