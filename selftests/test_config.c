// SPDX-License-Identifier: GPL-2.0-only
/* The config file: syntax, every error path, all-or-nothing, round trip. */
#include <errno.h>
#include <string.h>
#include <criterion/criterion.h>
#include "config.h"
#include "helpers.h"

static const char *const modes[] = { "observe", "enforce", NULL };
static unsigned int period, mode;
static char label[32];
static struct moat_knob_tree *t;

static int show_version(const struct moat_knob *k, char *buf, size_t len)
{
	return snprintf(buf, len, "1") >= (int)len ? -EOVERFLOW : 0;
}

static void setup(void)
{
	struct moat_knob knobs[] = {
		{ .path = "period_ms", .type = MOAT_KNOB_U32, .writable = true,
		  .min = 10, .max = 60000, .data = &period },
		{ .path = "mode", .type = MOAT_KNOB_CHOICE, .writable = true,
		  .choices = modes, .data = &mode },
		{ .path = "groups/pod-a/label", .type = MOAT_KNOB_STRING,
		  .writable = true, .str_max = sizeof(label), .data = label },
		{ .path = "version", .type = MOAT_KNOB_SHOW, .show = show_version },
	};
	unsigned int i;

	period = 500;
	mode = 0;
	strcpy(label, "web");
	t = moat_knob_tree_new();
	for (i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++)
		cr_assert_eq(moat_knob_add(t, &knobs[i]), 0);
}

static void teardown(void)
{
	moat_knob_tree_free(t);
}

TestSuite(config, .init = setup, .fini = teardown);

/* Parse and apply @text; return the error, with its message in @err. */
static int load(const char *text, char *err, size_t len)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	struct moat_config c;
	int ret;

	cr_assert_not_null(f);
	err[0] = '\0';
	ret = moat_config_parse(f, "test.conf", &c, err, len);
	fclose(f);
	if (ret)
		return ret;
	ret = moat_config_apply(t, &c, "test.conf", err, len);
	moat_config_free(&c);
	return ret;
}

Test(config, fixture_applies)
{
	FILE *f = fixture_open("moat.conf");
	struct moat_config c;
	char err[256];

	cr_assert_not_null(f);
	cr_assert_eq(moat_config_parse(f, "moat.conf", &c, err, sizeof(err)), 0,
		     "%s", err);
	fclose(f);
	cr_assert_eq(c.nr, 3);
	cr_expect_eq(c.v[1].line, 4);
	cr_assert_eq(moat_config_apply(t, &c, "moat.conf", err, sizeof(err)), 0,
		     "%s", err);
	moat_config_free(&c);
	cr_expect_eq(period, 250);
	cr_expect_eq(mode, 1);
	cr_expect_str_eq(label, "a=b#not-a-comment");
}

Test(config, each_error_names_file_line_and_reason)
{
	static const struct {
		const char *text, *msg;
		int err;
	} cases[] = {
		{ "period_ms 250\n", "test.conf:1: expected 'path = value'", -EINVAL },
		{ "\n= 5\n", "test.conf:2: '' is not a valid path", -EINVAL },
		{ "../etc/passwd = x\n", "test.conf:1: '../etc/passwd' is not a valid path", -EINVAL },
		{ "mode = observe\nmode = enforce\n",
		  "test.conf:2: mode: already set at line 1", -EINVAL },
		{ "period_ms = \x01\n", "test.conf:1: period_ms: value too long or not printable", -EINVAL },
		{ "nosuch = 1\n", "test.conf:1: nosuch: no such knob", -ENOENT },
		{ "version = 2\n", "test.conf:1: version: read-only", -EPERM },
		{ "period_ms = 5\n",
		  "test.conf:1: period_ms: invalid value '5': expected an integer in [10, 60000]",
		  -EINVAL },
		{ "mode = on\n",
		  "test.conf:1: mode: invalid value 'on': expected one of observe, enforce",
		  -EINVAL },
	};
	char err[256];
	unsigned int i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_expect_eq(load(cases[i].text, err, sizeof(err)), cases[i].err,
			     "case %u", i);
		cr_expect_str_eq(err, cases[i].msg, "case %u", i);
	}
}

Test(config, nothing_is_half_applied)
{
	char err[256];

	cr_assert_eq(load("period_ms = 100\nmode = enforce\nperiod_ms2 = 1\n",
			  err, sizeof(err)), -ENOENT);
	cr_expect_eq(period, 500);
	cr_expect_eq(mode, 0);
}

Test(config, nul_byte_is_an_error)
{
	static const char text[] = "mode = obs\0erve\n";
	FILE *f = fmemopen((void *)text, sizeof(text) - 1, "r");
	struct moat_config c;
	char err[256];

	cr_expect_eq(moat_config_parse(f, "test.conf", &c, err, sizeof(err)),
		     -EINVAL);
	cr_expect_str_eq(err, "test.conf:1: NUL byte in line");
	fclose(f);
}

/* What print writes for the writable knobs loads back to the same values. */
Test(config, print_round_trips)
{
	char out[1024], err[256];
	FILE *f = fmemopen(out, sizeof(out), "w");

	period = 1234;
	mode = 1;
	strcpy(label, "x y = z");
	cr_assert_eq(moat_config_print(f, t, "", true), 0);
	fclose(f);
	cr_expect_str_eq(out, "groups/pod-a/label = x y = z\nmode = enforce\n"
			      "period_ms = 1234\n");

	period = 500;
	mode = 0;
	strcpy(label, "web");
	cr_assert_eq(load(out, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(period, 1234);
	cr_expect_eq(mode, 1);
	cr_expect_str_eq(label, "x y = z");
}
