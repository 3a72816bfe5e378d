/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_KNOB_H
#define MOAT_KNOB_H

#include <stdbool.h>
#include <stddef.h>

/*
 * The knob tree: all of moatd's state and tunables as one sysfs-like tree
 * of paths ("period_ms", "groups/<id>/class"), each holding one plain-text
 * value, read-only or read-write.  A knob's path is also its key in the
 * config file and the root of its metric's name.
 *
 * Errors mirror sysfs, and a failed write changes nothing:
 *   -ENOENT  no such path
 *   -EPERM   the path is read-only
 *   -EINVAL  the value is not valid for the knob (type, range, choices)
 */

#define MOAT_KNOB_PATH_MAX	256
#define MOAT_KNOB_VALUE_MAX	512
#define MOAT_ID_MAX		80

enum moat_knob_type {
	MOAT_KNOB_U32,		/* decimal, within [min, max] */
	MOAT_KNOB_CHOICE,	/* one of choices[] */
	MOAT_KNOB_STRING,	/* printable, < str_max bytes, checked by check() */
	MOAT_KNOB_SHOW,		/* read-only, computed by show() */
};

struct moat_knob;

/*
 * Extra validation of a string value; return 0 or -EINVAL, and then say
 * what was wrong in @why (@len > 0; left empty where "expected ..." says
 * it all).
 */
typedef int (*moat_knob_check_fn)(const struct moat_knob *k, const char *val,
				  char *why, size_t len);
/* Format a computed value into buf. */
typedef int (*moat_knob_show_fn)(const struct moat_knob *k, char *buf,
				 size_t len);
/* Store a value that has passed every check; @u is the parsed number or
 * choice index, @val the text. */
typedef void (*moat_knob_store_fn)(const struct moat_knob *k, unsigned int u,
				   const char *val);

struct moat_knob {
	enum moat_knob_type type;
	bool writable;
	bool transient;	/* lives and dies with what it belongs to: a
			   config file does not set it */
	unsigned int min, max;		/* MOAT_KNOB_U32 */
	const char *const *choices;	/* MOAT_KNOB_CHOICE, NULL-terminated */
	size_t str_max;			/* MOAT_KNOB_STRING: size of *data */
	const char *expects;		/* MOAT_KNOB_STRING: for messages */
	moat_knob_check_fn check;	/* MOAT_KNOB_STRING, optional */
	moat_knob_show_fn show;		/* MOAT_KNOB_SHOW; others: optional */
	moat_knob_store_fn store;	/* optional: instead of writing *data */
	void *data;	/* unsigned int (U32, CHOICE: the index), char[] */
	void *owner;	/* for show() and check() */
	/*
	 * Last: the tree keeps no struct moat_knob but its parts (knob.c),
	 * and the heads it shares hold only the leaf name here, in the bytes
	 * it needs: a knob from the tree is read through its pointer, never
	 * copied whole.
	 */
	char path[MOAT_KNOB_PATH_MAX];
};

struct moat_knob_tree;

struct moat_knob_tree *moat_knob_tree_new(void);
void moat_knob_tree_free(struct moat_knob_tree *t);

/**
 * moat_knob_add() - add a copy of @k to the tree.  Its storage (@k->data)
 * stays the caller's.
 *
 * Return: 0, -EEXIST for a path already there, -EINVAL for an invalid
 * path (see moat_knob_path_valid()), -ENOMEM.
 */
int moat_knob_add(struct moat_knob_tree *t, const struct moat_knob *k);

/**
 * moat_knob_add_all() - add copies of the @n knobs of @tmpl, each with
 * @owner and its path prefixed by @dir ("" for the top).  On error the
 * ones already added stay: remove @dir to undo.
 */
int moat_knob_add_all(struct moat_knob_tree *t, const char *dir,
		      const struct moat_knob *tmpl, size_t n, void *owner);

/** moat_knob_remove_dir() - remove every knob at or below @prefix. */
void moat_knob_remove_dir(struct moat_knob_tree *t, const char *prefix);

/** moat_knob_get() - the value of @path, as text. */
int moat_knob_get(const struct moat_knob_tree *t, const char *path,
		  char *buf, size_t len);

/**
 * moat_knob_check() - would moat_knob_set() of @val at @path succeed?
 * Changes nothing.
 */
int moat_knob_check(const struct moat_knob_tree *t, const char *path,
		    const char *val);

/**
 * moat_knob_check_why() - moat_knob_check(), and on -EINVAL what the
 * knob's own check found wrong in @why ("" when it is only type, length
 * or range: moat_knob_expects() says that).
 */
int moat_knob_check_why(const struct moat_knob_tree *t, const char *path,
			const char *val, char *why, size_t len);

/** moat_knob_set() - check, then store @val at @path. */
int moat_knob_set(struct moat_knob_tree *t, const char *path, const char *val);

/**
 * moat_knob_find() - the knob at @path, or NULL.  The tree puts it
 * together in a buffer of its own: the pointer is valid until the next
 * moat_knob_find() on the tree, or until the tree changes shape.  (A walk
 * hands its callback a knob valid for the call.)
 */
const struct moat_knob *moat_knob_find(const struct moat_knob_tree *t,
				       const char *path);

typedef int (*moat_knob_walk_fn)(const struct moat_knob *k, void *ctx);

/**
 * moat_knob_walk() - call @fn for each knob at or below @prefix ("" for
 * all), in path order.  A non-zero return from @fn stops the walk and is
 * returned; -ENOENT when nothing is at or below @prefix.
 */
int moat_knob_walk(const struct moat_knob_tree *t, const char *prefix,
		   moat_knob_walk_fn fn, void *ctx);

typedef int (*moat_knob_ls_fn)(const char *name, bool dir, void *ctx);

/**
 * moat_knob_add_dir() - make @path a directory that ls shows even with
 * no knob in it (rules/ before the first rule).  Return: 0, -EINVAL for
 * an invalid path, -ENOMEM.
 */
int moat_knob_add_dir(struct moat_knob_tree *t, const char *path);

/**
 * moat_knob_ls() - call @fn with each entry directly below @dir ("" for
 * the top), once each, in order, with whether it is a directory.
 * Return: as moat_knob_walk().
 */
int moat_knob_ls(const struct moat_knob_tree *t, const char *dir,
		 moat_knob_ls_fn fn, void *ctx);

/**
 * moat_knob_expects() - what @k accepts, for error messages: "an integer
 * in [10, 60000]", "one of observe, enforce", "read-only".
 */
void moat_knob_expects(const struct moat_knob *k, char *buf, size_t len);

/**
 * moat_id_valid() - whether @id may name one path component: 1 to
 * MOAT_ID_MAX - 1 characters from [A-Za-z0-9._-], not "." or "..".  So no
 * '/', no NUL, no control characters and no way out of the tree.
 */
bool moat_id_valid(const char *id);

/**
 * moat_knob_path_valid() - whether @path is a relative path of valid ids
 * joined by single '/', shorter than MOAT_KNOB_PATH_MAX.
 */
bool moat_knob_path_valid(const char *path);

/**
 * moat_value_valid() - whether @val may be a knob value at all: shorter
 * than MOAT_KNOB_VALUE_MAX, no control characters (so no newline: one
 * value is one line of the config file), and above ASCII only
 * well-formed UTF-8.
 */
bool moat_value_valid(const char *val);

/**
 * moat_knob_check_names() - a MOAT_KNOB_STRING check: Kubernetes names
 * (namespaces: [a-z0-9-]), one space between, or "*" for all; "" none.
 */
int moat_knob_check_names(const struct moat_knob *k, const char *val, char *why,
			  size_t len);
/* Whether @name is in @list, as moat_knob_check_names() takes it. */
bool moat_names_has(const char *list, const char *name);

#endif /* MOAT_KNOB_H */
