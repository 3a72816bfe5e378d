// SPDX-License-Identifier: GPL-2.0-only
/*
 * The journal, as moatd finds it in its state directory after a crash:
 * any bytes either decode or are refused, and what decodes encodes back
 * to the same entries.
 */
#include "fuzz.h"
#include "journal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct moat_journal j = {}, back = {};
	char why[PATH_MAX + 128], *text = NULL;
	size_t len, i;

	if (moat_journal_decode(&j, (const char *)data, size, why, sizeof(why))) {
		fuzz_check(j.n == 0 && why[0]);
		free(j.e);
		return 0;
	}
	fuzz_check(!moat_journal_encode(&j, &text, &len));
	fuzz_check(!moat_journal_decode(&back, text, len, why, sizeof(why)));
	fuzz_check(back.n == j.n);
	for (i = 0; i < j.n; i++) {
		fuzz_check(!strcmp(j.e[i].path, back.e[i].path));
		fuzz_check(!strcmp(j.e[i].orig, back.e[i].orig));
		fuzz_check(!strcmp(j.e[i].last, back.e[i].last));
		fuzz_check(!strcmp(j.e[i].pending, back.e[i].pending));
		fuzz_check(j.e[i].kind == back.e[i].kind);
	}
	free(text);
	free(j.e);
	free(back.e);
	return 0;
}
