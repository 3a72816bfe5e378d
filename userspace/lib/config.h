/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_CONFIG_H
#define MOAT_CONFIG_H

#include <stdbool.h>
#include <stdio.h>
#include "knob.h"

/*
 * The config file: one "path = value" line per writable knob, with the
 * knob tree's paths.  '#' starts a comment line; blank lines are ignored;
 * spaces around the path and the value are not part of them.  A '#' after
 * a value is part of the value.
 */

/*
 * The bounds of a config file: a line holds a path and a value with room
 * for spaces around them; a file holds thousands of them.  Anything
 * larger is refused, not read.
 */
#define MOAT_CONFIG_LINE_MAX	(MOAT_KNOB_PATH_MAX + MOAT_KNOB_VALUE_MAX + 256)
#define MOAT_CONFIG_MAX_BYTES	(1 << 20)

struct moat_config_entry {
	unsigned int line;
	char path[MOAT_KNOB_PATH_MAX];
	char value[MOAT_KNOB_VALUE_MAX];
};

struct moat_config {
	struct moat_config_entry *v;
	size_t nr, cap;
};

/**
 * moat_config_parse() - read @f, named @name in messages, into @out.
 * Syntax only: paths and values are checked by moat_config_apply().  At
 * most MOAT_CONFIG_MAX_BYTES, lines of at most MOAT_CONFIG_LINE_MAX.
 *
 * Return: 0, or -EINVAL with "@name:LINE: reason" in @err (a file or a
 * line too long too); a read error's -errno ("@name: read: reason"),
 * never taken for the end of the file.
 */
int moat_config_parse(FILE *f, const char *name, struct moat_config *out,
		      char *err, size_t errlen);

/**
 * moat_config_apply() - set every entry of @c in @t, all or nothing: each
 * is checked first, and on the first bad one nothing is set.
 *
 * Return: 0, or the knob error with "@name:LINE: reason" in @err.
 */
int moat_config_apply(struct moat_knob_tree *t, const struct moat_config *c,
		      const char *name, char *err, size_t errlen);

void moat_config_free(struct moat_config *c);

/**
 * moat_config_print() - print the knobs at or below @prefix as config
 * lines: all of them, or only those a config file sets (writable and not
 * transient), which parse and apply back to the same values.
 */
int moat_config_print(FILE *out, const struct moat_knob_tree *t,
		      const char *prefix, bool writable_only);

#endif /* MOAT_CONFIG_H */
