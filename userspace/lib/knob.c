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
 * A knob as the tree keeps it: 32 bytes.  A path is a directory and a leaf
 * ("groups/<id>" and "rqlat_p99_us"), and the rest of a knob (type, range,
 * callbacks) is the same for every group: so each entry points at an
 * interned head (the knob without owner and data, its path the leaf) and
 * an interned directory, and holds only its own owner and data.  At 1000
 * groups of 37 knobs that is 1.2 MiB, not the 6 MiB of a copy each; a
 * struct moat_knob is put together from the parts when asked for.
 */
struct head {
	size_t refs;
	struct moat_knob k;	/* owner, data NULL; path: the leaf name */
};

struct dir {
	size_t refs;
	char s[];		/* "" for the top */
};

struct ent {
	struct head *h;
	struct dir *d;
	void *owner;
	void *data;
};

/*
 * @v sorted by path; @heads in no order (a few hundred); @dir_v sorted.
 * @dirs: the directories that exist even with nothing in them (rules,
 * groups).  @found: what moat_knob_find() returns.
 */
struct moat_knob_tree {
	struct ent *v;
	size_t nr, cap;
	struct head **heads;
	size_t nr_heads, cap_heads;
	struct dir **dir_v;
	size_t nr_dir_v, cap_dir_v;
	char **dirs;
	size_t nr_dirs;
	struct moat_knob *found;
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
	struct moat_knob_tree *t = calloc(1, sizeof(*t));

	if (t && !(t->found = malloc(sizeof(*t->found)))) {
		free(t);
		t = NULL;
	}
	return t;
}

static void head_put(struct moat_knob_tree *t, struct head *h)
{
	size_t i;

	if (--h->refs)
		return;
	for (i = 0; t->heads[i] != h; i++)
		;
	t->heads[i] = t->heads[--t->nr_heads];
	free(h);
}

/* Index of the first directory >= @s. */
static size_t dir_lower_bound(const struct moat_knob_tree *t, const char *s)
{
	size_t lo = 0, hi = t->nr_dir_v;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(t->dir_v[mid]->s, s) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void dir_put(struct moat_knob_tree *t, struct dir *d)
{
	size_t i;

	if (--d->refs)
		return;
	i = dir_lower_bound(t, d->s);
	memmove(&t->dir_v[i], &t->dir_v[i + 1],
		(t->nr_dir_v - i - 1) * sizeof(*t->dir_v));
	t->nr_dir_v--;
	free(d);
}

void moat_knob_tree_free(struct moat_knob_tree *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nr_heads; i++)
		free(t->heads[i]);
	for (i = 0; i < t->nr_dir_v; i++)
		free(t->dir_v[i]);
	for (i = 0; i < t->nr_dirs; i++)
		free(t->dirs[i]);
	free(t->heads);
	free(t->dir_v);
	free(t->dirs);
	free(t->v);
	free(t->found);
	free(t);
}

/* strcmp() of @e's path ("dir/leaf", or "leaf" at the top) with @path. */
static int ent_cmp(const struct ent *e, const char *path)
{
	const unsigned char *p = (const unsigned char *)path;
	const unsigned char *s = (const unsigned char *)e->d->s;

	for (; *s; s++, p++)
		if (*s != *p)
			return *s - *p;
	if (e->d->s[0]) {
		if (*p != '/')
			return '/' - *p;
		p++;
	}
	for (s = (const unsigned char *)e->h->k.path; *s; s++, p++)
		if (*s != *p)
			return *s - *p;
	return -*p;
}

/* @e's path into @buf (MOAT_KNOB_PATH_MAX: moat_knob_add() checked it). */
static void ent_path(const struct ent *e, char *buf)
{
	size_t n = strlen(e->d->s);

	memcpy(buf, e->d->s, n);
	if (n)
		buf[n++] = '/';
	strcpy(buf + n, e->h->k.path);
}

/* @e put together as the knob it is. */
static void ent_knob(const struct ent *e, struct moat_knob *k)
{
	memcpy(k, &e->h->k, offsetof(struct moat_knob, path));
	k->owner = e->owner;
	k->data = e->data;
	ent_path(e, k->path);
}

/* Index of the first knob whose path is >= @path. */
static size_t lower_bound(const struct moat_knob_tree *t, const char *path)
{
	size_t lo = 0, hi = t->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (ent_cmp(&t->v[mid], path) < 0)
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

/* The entry at @path, or NULL. */
static const struct ent *find(const struct moat_knob_tree *t, const char *path)
{
	size_t i = lower_bound(t, path);

	return i < t->nr && !ent_cmp(&t->v[i], path) ? &t->v[i] : NULL;
}

const struct moat_knob *moat_knob_find(const struct moat_knob_tree *t,
				       const char *path)
{
	const struct ent *e = find(t, path);

	if (!e)
		return NULL;
	ent_knob(e, t->found);
	return t->found;
}

/* Does some knob live below @path, making it a directory? */
static bool is_dir(const struct moat_knob_tree *t, const char *path)
{
	char dir[MOAT_KNOB_PATH_MAX + 1], p[MOAT_KNOB_PATH_MAX];
	size_t i;

	snprintf(dir, sizeof(dir), "%s/", path);
	i = lower_bound(t, dir);
	if (i == t->nr)
		return false;
	ent_path(&t->v[i], p);
	return !strncmp(p, dir, strlen(dir));
}

/* Is a prefix of @path (at a '/') already a knob, a leaf? */
static bool below_leaf(const struct moat_knob_tree *t, const char *path)
{
	char buf[MOAT_KNOB_PATH_MAX];
	char *slash;

	strcpy(buf, path);
	while ((slash = strrchr(buf, '/'))) {
		*slash = '\0';
		if (find(t, buf))
			return true;
	}
	return false;
}

/* The same head: all but owner and data, the path's leaf @leaf. */
static bool head_is(const struct head *h, const struct moat_knob *k,
		    const char *leaf)
{
	const struct moat_knob *a = &h->k;

	return a->type == k->type && a->writable == k->writable &&
	       a->transient == k->transient && a->min == k->min &&
	       a->max == k->max && a->choices == k->choices &&
	       a->str_max == k->str_max && a->expects == k->expects &&
	       a->check == k->check && a->show == k->show &&
	       a->store == k->store && !strcmp(a->path, leaf);
}

/* A reference to the head of @k with leaf @leaf, made if it is new. */
static struct head *head_get(struct moat_knob_tree *t, const struct moat_knob *k,
			     const char *leaf)
{
	size_t i, n = strlen(leaf) + 1;
	struct head *h;

	for (i = 0; i < t->nr_heads; i++) {
		if (head_is(t->heads[i], k, leaf)) {
			t->heads[i]->refs++;
			return t->heads[i];
		}
	}
	if (t->nr_heads == t->cap_heads) {
		size_t cap = t->cap_heads ? t->cap_heads * 2 : 64;
		void *v = realloc(t->heads, cap * sizeof(*t->heads));

		if (!v)
			return NULL;
		t->heads = v;
		t->cap_heads = cap;
	}
	h = malloc(offsetof(struct head, k.path) + n);
	if (!h)
		return NULL;
	h->refs = 1;
	memcpy(&h->k, k, offsetof(struct moat_knob, path));
	h->k.owner = h->k.data = NULL;
	memcpy(h->k.path, leaf, n);
	t->heads[t->nr_heads++] = h;
	return h;
}

/* A reference to directory @s (of @n bytes), made if it is new. */
static struct dir *dir_get(struct moat_knob_tree *t, const char *s, size_t n)
{
	char buf[MOAT_KNOB_PATH_MAX];
	struct dir *d;
	size_t i;

	memcpy(buf, s, n);
	buf[n] = '\0';
	i = dir_lower_bound(t, buf);
	if (i < t->nr_dir_v && !strcmp(t->dir_v[i]->s, buf)) {
		t->dir_v[i]->refs++;
		return t->dir_v[i];
	}
	if (t->nr_dir_v == t->cap_dir_v) {
		size_t cap = t->cap_dir_v ? t->cap_dir_v * 2 : 64;
		void *v = realloc(t->dir_v, cap * sizeof(*t->dir_v));

		if (!v)
			return NULL;
		t->dir_v = v;
		t->cap_dir_v = cap;
	}
	d = malloc(sizeof(*d) + n + 1);
	if (!d)
		return NULL;
	d->refs = 1;
	memcpy(d->s, buf, n + 1);
	memmove(&t->dir_v[i + 1], &t->dir_v[i], (t->nr_dir_v - i) * sizeof(*t->dir_v));
	t->dir_v[i] = d;
	t->nr_dir_v++;
	return d;
}

int moat_knob_add(struct moat_knob_tree *t, const struct moat_knob *k)
{
	const char *slash = strrchr(k->path, '/');
	const char *leaf = slash ? slash + 1 : k->path;
	struct ent e = { .owner = k->owner, .data = k->data };
	size_t i;

	if (!moat_knob_path_valid(k->path))
		return -EINVAL;
	if (find(t, k->path) || is_dir(t, k->path) || below_leaf(t, k->path))
		return -EEXIST;
	if (t->nr == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 64;
		void *v = realloc(t->v, cap * sizeof(*t->v));

		if (!v)
			return -ENOMEM;
		t->v = v;
		t->cap = cap;
	}
	e.h = head_get(t, k, leaf);
	if (!e.h)
		return -ENOMEM;
	e.d = dir_get(t, k->path, slash ? (size_t)(slash - k->path) : 0);
	if (!e.d) {
		head_put(t, e.h);
		return -ENOMEM;
	}
	i = lower_bound(t, k->path);
	memmove(&t->v[i + 1], &t->v[i], (t->nr - i) * sizeof(*t->v));
	t->v[i] = e;
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
	char p[MOAT_KNOB_PATH_MAX];

	for (; j < t->nr; j++) {
		ent_path(&t->v[j], p);
		if (!under(p, prefix))
			break;
		head_put(t, t->v[j].h);
		dir_put(t, t->v[j].d);
	}
	memmove(&t->v[i], &t->v[j], (t->nr - j) * sizeof(*t->v));
	t->nr -= j - i;
}

int moat_knob_get(const struct moat_knob_tree *t, const char *path,
		  char *buf, size_t len)
{
	const struct ent *e = find(t, path);
	struct moat_knob knob, *k = &knob;
	int n;

	if (!e)
		return -ENOENT;
	ent_knob(e, k);
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

/*
 * Find @path's knob, put it together in @k, and parse @val for it: all
 * that a write checks.
 */
static int validate(const struct moat_knob_tree *t, const char *path,
		    const char *val, struct moat_knob *k, unsigned int *u,
		    char *why, size_t len)
{
	const struct ent *e = find(t, path);

	why[0] = '\0';
	if (!e)
		return -ENOENT;
	ent_knob(e, k);
	if (!k->writable)
		return -EPERM;
	if (!moat_value_valid(val))
		return -EINVAL;
	return parse(k, val, u, why, len);
}

int moat_knob_check_why(const struct moat_knob_tree *t, const char *path,
			const char *val, char *why, size_t len)
{
	struct moat_knob k;
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
	struct moat_knob k;
	unsigned int u = 0;
	char why[256];
	int err;

	/* once: a check may read the kernel (resctrl ways) or bind a port */
	err = validate(t, path, val, &k, &u, why, sizeof(why));
	if (err)
		return err;
	if (k.store)
		k.store(&k, u, val);
	else if (k.type == MOAT_KNOB_STRING)
		strcpy(k.data, val);
	else
		*(unsigned int *)k.data = u;
	return 0;
}

int moat_knob_walk(const struct moat_knob_tree *t, const char *prefix,
		   moat_knob_walk_fn fn, void *ctx)
{
	size_t i = lower_bound(t, prefix);
	struct moat_knob k;
	bool any = false;
	int err;

	for (; i < t->nr; i++) {
		ent_knob(&t->v[i], &k);
		if (!under(k.path, prefix))
			break;
		any = true;
		err = fn(&k, ctx);
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
	char p[MOAT_KNOB_PATH_MAX];
	bool any = false;
	int err = 0;

	if (find(t, dir))
		return -ENOTDIR;
	for (; i < t->nr && !err; i++) {
		const char *rest = p + dlen + (dlen ? 1 : 0);
		size_t n;

		ent_path(&t->v[i], p);
		if (!under(p, dir))
			break;
		n = strcspn(rest, "/");
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
