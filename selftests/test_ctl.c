// SPDX-License-Identifier: GPL-2.0-only
/* The control protocol's request lines, as moatd parses them. */
#include <errno.h>
#include <string.h>
#include <criterion/criterion.h>
#include "ctl.h"

static struct moat_ctl_req req;
static const char *why;

Test(ctl, each_verb_with_its_arguments)
{
	cr_assert_eq(moat_ctl_parse("get mode", &req, &why), 0);
	cr_expect_eq(req.verb, MOAT_REQ_GET);
	cr_expect_str_eq(req.path, "mode");
	cr_expect_null(req.value);

	cr_assert_eq(moat_ctl_parse("set rules/web web-* lc", &req, &why), 0);
	cr_expect_eq(req.verb, MOAT_REQ_SET);
	cr_expect_str_eq(req.path, "rules/web");
	cr_expect_str_eq(req.value, "web-* lc", "the value is the rest of the line");

	cr_assert_eq(moat_ctl_parse("rset rules/web ", &req, &why), 0);
	cr_expect_eq(req.verb, MOAT_REQ_RSET);
	cr_expect_str_eq(req.value, "", "'' removes a rule");

	/* as moatctl sends them: "VERB PATH", PATH maybe "" */
	cr_assert_eq(moat_ctl_parse("ls ", &req, &why), 0);
	cr_expect(req.verb == MOAT_REQ_LS && !*req.path);
	cr_assert_eq(moat_ctl_parse("tree groups", &req, &why), 0);
	cr_expect(req.verb == MOAT_REQ_TREE && !strcmp(req.path, "groups"));
	cr_assert_eq(moat_ctl_parse("config", &req, &why), 0);
	cr_expect_eq(req.verb, MOAT_REQ_CONFIG);
	cr_assert_eq(moat_ctl_parse("restore ", &req, &why), 0);
	cr_expect_eq(req.verb, MOAT_REQ_RESTORE);
}

Test(ctl, more_or_fewer_words_than_a_verb_takes_are_refused)
{
	static const struct { const char *line, *why; } bad[] = {
		{ "get period_ms mode", "get takes one PATH a request" },
		{ "get", "get takes a PATH" },
		{ "get ", "get takes a PATH" },
		{ "set period_ms", "set takes a PATH and a VALUE ('' for none)" },
		{ "set", "set takes a PATH and a VALUE" },
		{ "ls groups rules", "ls, tree and config take at most one PATH" },
		{ "restore now", "restore takes no arguments" },
		{ "frobnicate everything", "unknown request" },
		{ "GET mode", "unknown request" },
		{ "get ../x", "invalid path" },
		{ "get a\x1b[2Jb", "invalid path" },
	};
	unsigned int i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		cr_expect_eq(moat_ctl_parse(bad[i].line, &req, &why), -EINVAL,
			     "'%s' accepted", bad[i].line);
		cr_expect(why && !strcmp(why, bad[i].why), "'%s': '%s', not '%s'",
			  bad[i].line, why, bad[i].why);
	}
}

Test(ctl, an_overlong_path_is_refused_not_cut)
{
	char line[MOAT_CTL_REQUEST_MAX];

	memset(line, 'a', sizeof(line));
	memcpy(line, "get ", 4);
	line[4 + MOAT_KNOB_PATH_MAX] = '\0';
	cr_expect_eq(moat_ctl_parse(line, &req, &why), -EINVAL);
	cr_expect_str_eq(why, "path too long");
}
