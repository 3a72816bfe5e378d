// SPDX-License-Identifier: GPL-2.0-only
/*
 * The knob tree, kept as one array sorted by path.  Every path under a
 * directory shares the prefix "dir/", so a directory is a contiguous run
 * and listing, walking and removing are a binary search and a scan.
 */
#include <errno.h>
#include <stddef.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "knob.h"

/*
 * Sorted by path; each knob allocated to its path's length.  @dirs: the
 * directories that exist even with nothing in them (rules, groups).
 */
struct moat_knob_tree {
	struct moat_knob **v;
	size_t nr, cap;
	char **dirs;
	size_t nr_dirs;
};

bool moat_id_valid(const char *id)
{
	size_t n = strlen(id);

	if (!n || n >= MOAT_ID_MAX || !strcmp(id, ".") || !strcmp(id, ".."))
		return false;
	return strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			  "0123456789._-") == n;
}

bool moat_knob_path_valid(const char *path)
{
	char buf[MOAT_KNOB_PATH_MAX], *comp, *save;

	if (strlen(path) >= sizeof(buf) || !*path)
		return false;
	strcpy(buf, path);
	/* strtok_r would skip empty components: look for them first. */
	if (buf[0] == '/' || buf[strlen(buf) - 1] == '/' || strstr(buf, "//"))
		return false;
	for (comp = strtok_r(buf, "/", &save); comp;
	     comp = strtok_r(NULL, "/", &save))
		if (!moat_id_valid(comp))
			return false;
	return true;
}

/*
 * Printable: no control bytes, and bytes above ASCII only as well-formed
 * UTF-8 (cgroup names may use it), never a stray 0xff that a terminal,
 * the config file or a JSON reader would take apart.
 */
bool moat_value_valid(const char *val)
{
	const unsigned char *p = (const unsigned char *)val;

	while (*p) {
		unsigned int n, cp, i;

		if (*p < 0x80) {
			if (*p < 0x20 || *p == 0x7f)
				return false;
			p++;
			continue;
		}
		if (*p >= 0xc2 && *p <= 0xdf)
			n = 1, cp = *p & 0x1f;
		else if (*p >= 0xe0 && *p <= 0xef)
			n = 2, cp = *p & 0x0f;
		else if (*p >= 0xf0 && *p <= 0xf4)
			n = 3, cp = *p & 0x07;
		else
			return false;
		for (i = 1; i <= n; i++) {
			if ((p[i] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (p[i] & 0x3f);
		}
		/* overlong, surrogates, beyond U+10FFFF; C1 controls */
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff ||
		    (cp >= 0x80 && cp <= 0x9f))
			return false;
		p += n + 1;
	}
	return (const char *)p - val < MOAT_KNOB_VALUE_MAX;
}

struct moat_knob_tree *moat_knob_tree_new(void)
{
	return calloc(1, sizeof(struct moat_knob_tree));
}

void moat_knob_tree_free(struct moat_knob_tree *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nr; i++)
		free(t->v[i]);
	for (i = 0; i < t->nr_dirs; i++)
		free(t->dirs[i]);
	free(t->dirs);
	free(t->v);
	free(t);
}

/* Index of the first knob whose path is >= @path. */
static size_t lower_bound(const struct moat_knob_tree *t, const char *path)
{
	size_t lo = 0, hi = t->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(t->v[mid]->path, path) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Is @path @prefix itself or below it? "" is above everything. */
static bool under(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	return !n || (!strncmp(path, prefix, n) && (!path[n] || path[n] == '/'));
}

const struct moat_knob *moat_knob_find(const struct moat_knob_tree *t,
				       const char *path)
{
	size_t i = lower_bound(t, path);

	return i < t->nr && !strcmp(t->v[i]->path, path) ? t->v[i] : NULL;
}

/* Does some knob live below @path, making it a directory? */
static bool is_dir(const struct moat_knob_tree *t, const char *path)
{
	char dir[MOAT_KNOB_PATH_MAX + 1];
	size_t i;

	snprintf(dir, sizeof(dir), "%s/", path);
	i = lower_bound(t, dir);
	return i < t->nr && !strncmp(t->v[i]->path, dir, strlen(dir));
}

/* Is a prefix of @path (at a '/') already a knob, a leaf? */
static bool below_leaf(const struct moat_knob_tree *t, const char *path)
{
	char buf[MOAT_KNOB_PATH_MAX];
	char *slash;

	strcpy(buf, path);
	while ((slash = strrchr(buf, '/'))) {
		*slash = '\0';
		if (moat_knob_find(t, buf))
			return true;
	}
	return false;
}

int moat_knob_add(struct moat_knob_tree *t, const struct moat_knob *k)
{
	struct moat_knob *copy;
	size_t i, n;

	if (!moat_knob_path_valid(k->path))
		return -EINVAL;
	if (moat_knob_find(t, k->path) || is_dir(t, k->path) ||
	    below_leaf(t, k->path))
		return -EEXIST;
	if (t->nr == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		void *v = realloc(t->v, cap * sizeof(*t->v));

		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	n = strlen(k->path) + 1;
	copy = malloc(offsetof(struct moat_knob, path) + n);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, k, offsetof(struct moat_knob, path));
	memcpy(copy->path, k->path, n);
	i = lower_bound(t, k->path);
	memmove(&t->v[i + 1], &t->v[i], (t->nr - i) * sizeof(*t->v));
	t->v[i] = copy;
	t->nr++;
	return 0;
}

int moat_knob_add_all(struct moat_knob_tree *t, const char *dir,
		      const struct moat_knob *tmpl, size_t n, void *owner)
{
	struct moat_knob k;
	size_t i;
	int err;

	for (i = 0; i < n; i++) {
		k = tmpl[i];
		k.owner = owner;
		if ((size_t)snprintf(k.path, sizeof(k.path), "%s%s%s", dir,
				     *dir ? "/" : "", tmpl[i].path) >= sizeof(k.path))
			return -ENAMETOOLONG;
		err = moat_knob_add(t, &k);
		if (err)
			return err;
	}
	return 0;
}

void moat_knob_remove_dir(struct moat_knob_tree *t, const char *prefix)
{
	size_t i = lower_bound(t, prefix), j = i;

	while (j < t->nr && under(t->v[j]->path, prefix))
		free(t->v[j++]);
	memmove(&t->v[i], &t->v[j], (t->nr - j) * sizeof(*t->v));
	t->nr -= j - i;
}

int moat_knob_get(const struct moat_knob_tree *t, const char *path,
		  char *buf, size_t len)
{
	const struct moat_knob *k = moat_knob_find(t, path);
	int n;

	if (!k)
		return -ENOENT;
	if (k->show)
		return k->show(k, buf, len);
	switch (k->type) {
	case MOAT_KNOB_U32:
		n = snprintf(buf, len, "%u", *(unsigned int *)k->data);
		break;
	case MOAT_KNOB_CHOICE:
		n = snprintf(buf, len, "%s",
			     k->choices[*(unsigned int *)k->data]);
		break;
	case MOAT_KNOB_STRING:
		n = snprintf(buf, len, "%s", (const char *)k->data);
		break;
	default:
		return -EINVAL;
	}
	return n < 0 || (size_t)n >= len ? -EOVERFLOW : 0;
}

/*
 * Parse @val for @k into *@u (U32, CHOICE) without storing it; a string
 * knob's check says why it refuses in @why.
 */
static int parse(const struct moat_knob *k, const char *val, unsigned int *u,
		 char *why, size_t len)
{
	unsigned long n;
	char *end;
	size_t i;

	switch (k->type) {
	case MOAT_KNOB_U32:
		if (!*val || strspn(val, "0123456789") != strlen(val))
			return -EINVAL;
		errno = 0;
		n = strtoul(val, &end, 10);
		if (errno || n > UINT_MAX || n < k->min || n > k->max)
			return -EINVAL;
		*u = n;
		return 0;
	case MOAT_KNOB_CHOICE:
		for (i = 0; k->choices[i]; i++) {
			if (!strcmp(val, k->choices[i])) {
				*u = i;
				return 0;
			}
		}
		return -EINVAL;
	case MOAT_KNOB_STRING:
		if (strlen(val) >= k->str_max)
			return -EINVAL;
		return k->check ? k->check(k, val, why, len) : 0;
	case MOAT_KNOB_SHOW:
		break;
	}
	return -EPERM;
}

/* Find @path's knob and parse @val for it: all that a write checks. */
static int validate(const struct moat_knob_tree *t, const char *path,
		    const char *val, const struct moat_knob **k, unsigned int *u,
		    char *why, size_t len)
{
	why[0] = '\0';
	*k = moat_knob_find(t, path);
	if (!*k)
		return -ENOENT;
	if (!(*k)->writable)
		return -EPERM;
	if (!moat_value_valid(val))
		return -EINVAL;
	return parse(*k, val, u, why, len);
}

int moat_knob_check_why(const struct moat_knob_tree *t, const char *path,
			const char *val, char *why, size_t len)
{
	const struct moat_knob *k;
	unsigned int u;

	return validate(t, path, val, &k, &u, why, len);
}

int moat_knob_check(const struct moat_knob_tree *t, const char *path,
		    const char *val)
{
	char why[256];

	return moat_knob_check_why(t, path, val, why, sizeof(why));
}

int moat_knob_set(struct moat_knob_tree *t, const char *path, const char *val)
{
	const struct moat_knob *k;
	unsigned int u = 0;
	char why[256];
	int err;

	/* once: a check may read the kernel (resctrl ways) or bind a port */
	err = validate(t, path, val, &k, &u, why, sizeof(why));
	if (err)
		return err;
	if (k->store)
		k->store(k, u, val);
	else if (k->type == MOAT_KNOB_STRING)
		strcpy(k->data, val);
	else
		*(unsigned int *)k->data = u;
	return 0;
}

int moat_knob_walk(const struct moat_knob_tree *t, const char *prefix,
		   moat_knob_walk_fn fn, void *ctx)
{
	size_t i = lower_bound(t, prefix);
	bool any = false;
	int err;

	for (; i < t->nr && under(t->v[i]->path, prefix); i++) {
		any = true;
		err = fn(t->v[i], ctx);
		if (err)
			return err;
	}
	return any ? 0 : -ENOENT;
}

int moat_knob_add_dir(struct moat_knob_tree *t, const char *path)
{
	void *v;

	if (!moat_knob_path_valid(path))
		return -EINVAL;
	v = realloc(t->dirs, (t->nr_dirs + 1) * sizeof(*t->dirs));
	if (!v)
		return -ENOMEM;
	t->dirs = v;
	t->dirs[t->nr_dirs] = strdup(path);
	return t->dirs[t->nr_dirs] ? (t->nr_dirs++, 0) : -ENOMEM;
}

struct ls_entry {
	char name[MOAT_KNOB_PATH_MAX];
	bool dir;
};

static int cmp_ls(const void *a, const void *b)
{
	return strcmp(((const struct ls_entry *)a)->name,
		      ((const struct ls_entry *)b)->name);
}

/* @name (of @n bytes) into @v, unless it is its last entry already. */
static int ls_add(struct ls_entry **v, size_t *nr, const char *name, size_t n,
		  bool dir)
{
	void *p;

	if (*nr && strlen((*v)[*nr - 1].name) == n &&
	    !strncmp((*v)[*nr - 1].name, name, n))
		return 0;
	p = realloc(*v, (*nr + 1) * sizeof(**v));
	if (!p)
		return -ENOMEM;
	*v = p;
	memcpy((*v)[*nr].name, name, n);
	(*v)[*nr].name[n] = '\0';
	(*v)[(*nr)++].dir = dir;
	return 0;
}

int moat_knob_ls(const struct moat_knob_tree *t, const char *dir,
		 moat_knob_ls_fn fn, void *ctx)
{
	size_t dlen = strlen(dir), i = lower_bound(t, dir), nr = 0, j;
	struct ls_entry *v = NULL;
	bool any = false;
	int err = 0;

	if (moat_knob_find(t, dir))
		return -ENOTDIR;
	for (; i < t->nr && under(t->v[i]->path, dir) && !err; i++) {
		const char *rest = t->v[i]->path + dlen + (dlen ? 1 : 0);
		size_t n = strcspn(rest, "/");

		any = true;
		err = ls_add(&v, &nr, rest, n, rest[n] == '/');
	}
	for (i = 0; i < t->nr_dirs && !err; i++) {
		const char *d = t->dirs[i], *rest = d + dlen + (dlen ? 1 : 0);

		if (!strcmp(d, dir)) {
			any = true;
		} else if (under(d, dir)) {
			any = true;
			err = ls_add(&v, &nr, rest, strcspn(rest, "/"), true);
		}
	}
	if (!err && nr)
		qsort(v, nr, sizeof(*v), cmp_ls);
	for (i = 0; i < nr && !err; i = j) {
		for (j = i + 1; j < nr && !strcmp(v[j].name, v[i].name); j++)
			v[i].dir |= v[j].dir;
		err = fn(v[i].name, v[i].dir, ctx);
	}
	free(v);
	if (err)
		return err;
	return any ? 0 : -ENOENT;
}

void moat_knob_expects(const struct moat_knob *k, char *buf, size_t len)
{
	size_t i, n;

	if (!k->writable) {
		snprintf(buf, len, "read-only");
		return;
	}
	switch (k->type) {
	case MOAT_KNOB_U32:
		snprintf(buf, len, "an integer in [%u, %u]", k->min, k->max);
		return;
	case MOAT_KNOB_CHOICE:
		n = snprintf(buf, len, "one of");
		for (i = 0; k->choices[i] && n < len; i++)
			n += snprintf(buf + n, len - n, "%s %s", i ? "," : "",
				      k->choices[i]);
		return;
	case MOAT_KNOB_STRING:
		if (k->expects)
			snprintf(buf, len, "%s", k->expects);
		else
			snprintf(buf, len, "printable text under %zu bytes",
				 k->str_max);
		return;
	case MOAT_KNOB_SHOW:
		break;
	}
	snprintf(buf, len, "read-only");
}

int moat_knob_check_names(const struct moat_knob *k, const char *val, char *why,
			  size_t len)
{
	size_t i;

	if (!strcmp(val, "*"))
		return 0;
	for (i = 0; val[i]; i++) {
		char c = val[i];

		if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')
			continue;
		if (c == ' ' && i && val[i - 1] != ' ' && val[i + 1])
			continue;
		snprintf(why, len, "'%c' at %zu: names of [a-z0-9-], one space between, or *",
			 c, i + 1);
		return -EINVAL;
	}
	return 0;
}

bool moat_names_has(const char *list, const char *name)
{
	size_t n = strlen(name);
	const char *p = list;

	if (!strcmp(list, "*"))
		return true;
	while (n && (p = strstr(p, name))) {
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || !p[n]))
			return true;
		p += n;
	}
	return false;
}
