// SPDX-License-Identifier: GPL-2.0-only
/*
 * A knob tree with a knob of every kind moatd registers, for the config,
 * knob and control-protocol targets: numbers with ranges, choices,
 * strings with a check, read-only values, and groups' directories.
 */
#include <errno.h>
#include "fuzz.h"
#include "tree.h"

static const char *const modes[] = { "observe", "enforce", NULL };
static unsigned int period_ms = 500, mode, target = 2000, margin = 35;
static char listen_at[64] = "127.0.0.1:9590", rule[MOAT_KNOB_VALUE_MAX];

/* As http/listen's: a form to keep, or why not. */
static int check_listen(const struct moat_knob *k, const char *val, char *why,
			size_t len)
{
	if (!*val || strchr(val, ':'))
		return 0;
	snprintf(why, len, "no port");
	return -EINVAL;
}

static int show_version(const struct moat_knob *k, char *buf, size_t len)
{
	return snprintf(buf, len, "0.1.0") >= (int)len ? -EOVERFLOW : 0;
}

struct moat_knob_tree *fuzz_tree(void)
{
	const struct moat_knob knobs[] = {
		{ .path = "version", .type = MOAT_KNOB_SHOW, .show = show_version },
		{ .path = "mode", .type = MOAT_KNOB_CHOICE, .writable = true,
		  .choices = modes, .data = &mode },
		{ .path = "period_ms", .type = MOAT_KNOB_U32, .writable = true,
		  .min = 50, .max = 60000, .data = &period_ms },
		{ .path = "lc/rqlat_p99_target_us", .type = MOAT_KNOB_U32,
		  .writable = true, .min = 1, .max = 10000000, .data = &target },
		{ .path = "hints/cpu_margin_pct", .type = MOAT_KNOB_U32,
		  .writable = true, .max = 100, .data = &margin },
		{ .path = "http/listen", .type = MOAT_KNOB_STRING, .writable = true,
		  .data = listen_at, .str_max = sizeof(listen_at),
		  .check = check_listen, .expects = "ADDR:PORT" },
		{ .path = "rules/web", .type = MOAT_KNOB_STRING, .writable = true,
		  .data = rule, .str_max = sizeof(rule), .expects = "<glob> <class>" },
		{ .path = "groups/web.a/class", .type = MOAT_KNOB_CHOICE,
		  .writable = true, .transient = true, .choices = modes,
		  .data = &mode },
		{ .path = "groups/web.a/version", .type = MOAT_KNOB_SHOW,
		  .show = show_version },
	};
	struct moat_knob_tree *t = moat_knob_tree_new();

	if (!t || moat_knob_add_all(t, "", knobs, sizeof(knobs) / sizeof(knobs[0]),
				    NULL))
		abort();
	return t;
}

/* The tree's values as config text (to free). */
char *fuzz_tree_text(const struct moat_knob_tree *t, bool writable_only)
{
	char *text = NULL;
	size_t len;
	FILE *f = open_memstream(&text, &len);

	fuzz_check(f);
	fuzz_check(!moat_config_print(f, t, "", writable_only));
	fclose(f);
	return text;
}
