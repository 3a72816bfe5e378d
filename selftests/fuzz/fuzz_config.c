// SPDX-License-Identifier: GPL-2.0-only
/*
 * The config file (and the state file, same format): any text either
 * applies whole or changes nothing, and what applied prints back as
 * config text that parses and applies to the same values.
 */
#include "fuzz.h"
#include "tree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct moat_knob_tree *t;
	struct moat_config c;
	char msg[1024], *before, *after;
	FILE *f;
	int err;

	if (!t)
		t = fuzz_tree();
	f = fuzz_file(data, size);
	if (!f)
		return 0;
	before = fuzz_tree_text(t, false);
	err = moat_config_parse(f, "fuzz.conf", &c, msg, sizeof(msg));
	fclose(f);
	if (err) {
		fuzz_check(c.nr == 0 && !strncmp(msg, "fuzz.conf:", 10));
		free(before);
		return 0;
	}
	err = moat_config_apply(t, &c, "fuzz.conf", msg, sizeof(msg));
	after = fuzz_tree_text(t, false);
	if (err) {
		fuzz_check(!strcmp(before, after));	/* nothing half-applied */
		fuzz_check(!strncmp(msg, "fuzz.conf:", 10));
	} else {
		struct moat_config back;
		char *config = fuzz_tree_text(t, true), *again;

		f = fmemopen(config, strlen(config), "r");
		fuzz_check(f && !moat_config_parse(f, "printed", &back, msg, sizeof(msg)));
		fclose(f);
		fuzz_check(!moat_config_apply(t, &back, "printed", msg, sizeof(msg)));
		again = fuzz_tree_text(t, false);
		fuzz_check(!strcmp(after, again));
		moat_config_free(&back);
		free(config);
		free(again);
	}
	moat_config_free(&c);
	free(before);
	free(after);
	return 0;
}
