// SPDX-License-Identifier: GPL-2.0-only
/*
 * The control socket's request lines: parsed as moatd parses them, then
 * carried out on a knob tree as moatd's server does for each verb.
 */
#include "fuzz.h"
#include "ctl.h"
#include "tree.h"

static int ls_one(const char *name, bool dir, void *arg)
{
	fuzz_check(*name && !strchr(name, '/'));
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct moat_knob_tree *t;
	char *line = fuzz_string(data, size, MOAT_CTL_REQUEST_MAX);
	char val[MOAT_KNOB_VALUE_MAX], *text = NULL;
	struct moat_ctl_req req;
	const char *why;
	size_t len;
	FILE *f;

	if (!line)
		return 0;
	if (!t)
		t = fuzz_tree();
	if (moat_ctl_parse(line, &req, &why)) {
		fuzz_check(why && *why);
		free(line);
		return 0;
	}
	fuzz_check(!*req.path || moat_knob_path_valid(req.path));
	fuzz_check(!req.value == (req.verb != MOAT_REQ_SET &&
				  req.verb != MOAT_REQ_RSET));
	switch (req.verb) {
	case MOAT_REQ_GET:
		moat_knob_get(t, req.path, val, sizeof(val));
		break;
	case MOAT_REQ_SET:
	case MOAT_REQ_RSET:
		moat_knob_set(t, req.path, req.value);
		break;
	case MOAT_REQ_LS:
		moat_knob_ls(t, req.path, ls_one, NULL);
		break;
	case MOAT_REQ_TREE:
	case MOAT_REQ_CONFIG:
		f = open_memstream(&text, &len);
		fuzz_check(f);
		moat_config_print(f, t, req.path, req.verb == MOAT_REQ_CONFIG);
		fclose(f);
		free(text);
		break;
	case MOAT_REQ_RESTORE:
	case MOAT_REQ_RESET:
		fuzz_check(!*req.path);	/* they take no arguments */
		break;
	}
	free(line);
	return 0;
}
