// SPDX-License-Identifier: GPL-2.0-only
/*
 * Knob paths and values as moatctl and the config send them, "PATH\nVALUE":
 * a refused write changes nothing, an accepted one reads back, and the
 * validity predicates agree with what the tree does.
 */
#include <errno.h>
#include "fuzz.h"
#include "tree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct moat_knob_tree *t;
	char *in = fuzz_string(data, size, 4 * MOAT_KNOB_VALUE_MAX), *val;
	char got[MOAT_KNOB_VALUE_MAX], why[256], *before, *after;
	int err;

	if (!in)
		return 0;
	if (!t)
		t = fuzz_tree();
	val = strchr(in, '\n');
	val = val ? (*val = '\0', val + 1) : in + strlen(in);
	moat_id_valid(in);
	if (!moat_knob_path_valid(in))
		fuzz_check(!moat_knob_find(t, in));
	before = fuzz_tree_text(t, false);
	err = moat_knob_check_why(t, in, val, why, sizeof(why));
	fuzz_check(err == moat_knob_set(t, in, val));
	after = fuzz_tree_text(t, false);
	if (err) {
		fuzz_check(!strcmp(before, after));
	} else {
		fuzz_check(moat_value_valid(val));
		fuzz_check(!moat_knob_get(t, in, got, sizeof(got)));
	}
	free(before);
	free(after);
	free(in);
	return 0;
}
