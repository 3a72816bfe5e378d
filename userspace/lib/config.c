// SPDX-License-Identifier: GPL-2.0-only
/* The config file: parsing, all-or-nothing application, and printing. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "config.h"

static char *trim(char *s)
{
	char *end;

	while (*s == ' ' || *s == '\t')
		s++;
	end = s + strlen(s);
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' ||
			   end[-1] == '\n' || end[-1] == '\r'))
		*--end = '\0';
	return s;
}

static struct moat_config_entry *push(struct moat_config *c)
{
	if (c->nr == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		void *v = realloc(c->v, cap * sizeof(*c->v));

		if (!v)
			return NULL;
		c->v = v;
		c->cap = cap;
	}
	return &c->v[c->nr++];
}

static const struct moat_config_entry *find(const struct moat_config *c,
					    const char *path)
{
	size_t i;

	for (i = 0; i < c->nr; i++)
		if (!strcmp(c->v[i].path, path))
			return &c->v[i];
	return NULL;
}

/* One line; 0 and nothing added for blank and comment lines. */
static int parse_line(char *text, const char *name, unsigned int line,
		      struct moat_config *out, char *err, size_t errlen)
{
	const struct moat_config_entry *dup;
	struct moat_config_entry *e;
	char *s = trim(text), *eq, *path, *value;

	if (line == 1 && !strncmp(text, "\xef\xbb\xbf", 3)) {
		snprintf(err, errlen, "%s:1: starts with a UTF-8 byte order mark (EF BB BF): save it without one",
			 name);
		return -EINVAL;
	}
	if (!*s || *s == '#')
		return 0;
	eq = strchr(s, '=');
	if (!eq) {
		snprintf(err, errlen, "%s:%u: expected 'path = value'", name, line);
		return -EINVAL;
	}
	*eq = '\0';
	path = trim(s);
	value = trim(eq + 1);
	if (!moat_knob_path_valid(path)) {
		snprintf(err, errlen, "%s:%u: '%.*s' is not a valid path", name,
			 line, MOAT_KNOB_PATH_MAX, path);
		return -EINVAL;
	}
	if (!moat_value_valid(value)) {
		snprintf(err, errlen, "%s:%u: %s: value too long or not printable",
			 name, line, path);
		return -EINVAL;
	}
	dup = find(out, path);
	if (dup) {
		snprintf(err, errlen, "%s:%u: %s: already set at line %u", name,
			 line, path, dup->line);
		return -EINVAL;
	}
	e = push(out);
	if (!e)
		return -ENOMEM;
	e->line = line;
	strcpy(e->path, path);
	strcpy(e->value, value);
	return 0;
}

/*
 * The next line of @f into @buf (@len bytes), its newline cut; its length,
 * or -1 at the end, -E2BIG for a line that does not fit, -EINVAL for a
 * NUL byte, -errno for a read error.  Bounded: a config that is
 * /dev/zero, or one huge line, is refused, never read into memory.
 */
static ssize_t next_line(FILE *f, char *buf, size_t len, size_t *total)
{
	size_t n = 0;
	int c;

	errno = 0;
	while ((c = getc(f)) != EOF) {
		if (++*total > MOAT_CONFIG_MAX_BYTES)
			return -EFBIG;
		if (c == '\n')
			break;
		if (!c)
			return -EINVAL;
		if (n + 1 >= len)
			return -E2BIG;
		buf[n++] = c;
	}
	if (c == EOF && ferror(f))
		return errno ? -errno : -EIO;
	buf[n] = '\0';
	return c == EOF && !n ? -1 : (ssize_t)n;
}

int moat_config_parse(FILE *f, const char *name, struct moat_config *out,
		      char *err, size_t errlen)
{
	char text[MOAT_CONFIG_LINE_MAX + 2];
	unsigned int line = 0;
	size_t total = 0;
	ssize_t n;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	while (!ret && (n = next_line(f, text, sizeof(text), &total)) != -1) {
		line++;
		if (n == -EINVAL)
			snprintf(err, errlen, "%s:%u: NUL byte in line", name, line);
		else if (n == -E2BIG)
			snprintf(err, errlen, "%s:%u: line longer than %d bytes", name, line,
				 MOAT_CONFIG_LINE_MAX);
		else if (n == -EFBIG)
			snprintf(err, errlen, "%s: larger than %d bytes: not a config file",
				 name, MOAT_CONFIG_MAX_BYTES);
		else if (n < 0)	/* a read error is not the end of the file */
			snprintf(err, errlen, "%s: read: %s", name, strerror((int)-n));
		if (n < 0) {
			ret = n == -E2BIG || n == -EFBIG ? -EINVAL : (int)n;
			break;
		}
		ret = parse_line(text, name, line, out, err, errlen);
	}
	if (ret)
		moat_config_free(out);
	return ret;
}

int moat_config_apply(struct moat_knob_tree *t, const struct moat_config *c,
		      const char *name, char *err, size_t errlen)
{
	char expects[256], bad[256];
	size_t i;
	int ret;

	for (i = 0; i < c->nr; i++) {
		const struct moat_config_entry *e = &c->v[i];

		ret = moat_knob_check_why(t, e->path, e->value, bad, sizeof(bad));
		if (!ret)
			continue;
		if (ret == -ENOENT) {
			snprintf(err, errlen, "%s:%u: %s: no such knob", name,
				 e->line, e->path);
		} else if (ret == -EPERM) {
			snprintf(err, errlen, "%s:%u: %s: read-only", name,
				 e->line, e->path);
		} else {
			moat_knob_expects(moat_knob_find(t, e->path), expects,
					  sizeof(expects));
			snprintf(err, errlen, "%s:%u: %s: invalid value '%s': expected %s%s%s",
				 name, e->line, e->path, e->value, expects,
				 *bad ? ": " : "", bad);
		}
		return ret;
	}
	for (i = 0; i < c->nr; i++)
		moat_knob_set(t, c->v[i].path, c->v[i].value);
	return 0;
}

void moat_config_free(struct moat_config *c)
{
	free(c->v);
	memset(c, 0, sizeof(*c));
}

struct print_ctx {
	FILE *out;
	const struct moat_knob_tree *t;
	bool writable_only;
};

static int print_one(const struct moat_knob *k, void *arg)
{
	struct print_ctx *p = arg;
	char val[MOAT_KNOB_VALUE_MAX];
	int err;

	if (p->writable_only && (!k->writable || k->transient))
		return 0;
	err = moat_knob_get(p->t, k->path, val, sizeof(val));
	if (err == -ENODATA)	/* nothing measured yet: nothing to print */
		return 0;
	if (err)
		return err;
	fprintf(p->out, "%s = %s\n", k->path, val);
	return 0;
}

int moat_config_print(FILE *out, const struct moat_knob_tree *t,
		      const char *prefix, bool writable_only)
{
	struct print_ctx p = { out, t, writable_only };

	return moat_knob_walk(t, prefix, print_one, &p);
}
