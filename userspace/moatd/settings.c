// SPDX-License-Identifier: GPL-2.0-only
/*
 * Where the writable knobs' values come from, lowest precedence first:
 * their defaults, the config file, the state file (what `moatctl set`
 * changed, not `set --runtime`, so that it survives a restart), then
 * the command line (--mode, --listen).  Both files have the config
 * format; the state file is written by moatd alone, atomically.
 *
 * Start-up and SIGHUP do the same: read every source, merge them (a
 * later source's line replaces an earlier one's), check every merged
 * line against the running knob tree, and only when all pass, change
 * the knobs whose value differs and create or remove rules.  A reload
 * is all or nothing: a source that cannot be read or a line that does
 * not check changes nothing, and the running settings stay.  A value
 * that is already what it is asked to be is not set again (so rebinding
 * the HTTP address moatd holds is no change at all).
 *
 * The config file is watched: each period moatd stat()s it, and a file
 * that is another one (a ConfigMap's update swaps the symlink its path
 * goes through), was written, or came or went since the last load is
 * loaded again, as SIGHUP would (settings/watch_config, on by default).
 * What `moatctl set` keeps in the state file outranks it until `moatctl
 * reset` drops it; settings/local says what it holds.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "config.h"
#include "knob.h"
#include "groups.h"
#include "log.h"
#include "settings.h"

/* A rule's name, or NULL for a path that is no rule's. */
static const char *rule_name(const char *path)
{
	return rules_name(path, NULL);
}

struct settings {
	const char *config_path;
	bool config_given;
	char state_path[PATH_MAX];	/* "" when not persisting */
	char *defaults;			/* the writable knobs before any file */
	struct moat_config state;	/* what the state file holds */
	struct moat_config cli;		/* --mode, --listen: over the files */
	unsigned int watch;		/* settings/watch_config */
	struct stat seen;		/* the config file at the last load, */
	bool seen_there;		/* if it was there */
	unsigned long long reloads[2];	/* applied, refused */
};

static struct settings *ST(const struct moatd *d)
{
	return moatd_mod(d, MOD_SETTINGS);
}

int settings_set(struct moatd *d, const char *path, const char *val)
{
	int err;

	err = rule_name(path) ? rules_set(d, path, val) :
				moat_knob_set(d->tree, path, val);
	if (!err)
		pr_info("knob %s set to '%s'", path, val);
	return err;
}

/* A merged line, and the source it came from, for messages. */
struct setting {
	const char *src;
	struct moat_config_entry e;
};

struct merged {
	struct setting *v;
	size_t n;
};

static int merge(struct merged *s, const struct moat_config *c,
		 const char *src)
{
	size_t i, j;

	for (i = 0; i < c->nr; i++) {
		for (j = 0; j < s->n && strcmp(s->v[j].e.path, c->v[i].path); j++)
			;
		if (j == s->n) {
			void *v = realloc(s->v, (s->n + 1) * sizeof(*s->v));

			if (!v)
				return -ENOMEM;
			s->v = v;
			s->n++;
		}
		s->v[j] = (struct setting){ src, c->v[i] };
	}
	return 0;
}

/*
 * Read @path as config text into @c.  A missing file is empty when
 * @optional.  Only a regular file is read, and no more of it than a
 * config can be (lib/config.c): a FIFO would block moatd in open() until
 * someone wrote to it, and the control socket, HTTP and the cycle with
 * it; /dev/zero would be read until the OOM killer came.  Anything that
 * cannot be read whole (an I/O error, ENOMEM) is an error, never taken
 * for the end of the file.
 */
static int read_file(const char *path, bool optional, struct moat_config *c)
{
	char msg[1024];
	struct stat st;
	FILE *f;
	int fd, err;

	memset(c, 0, sizeof(*c));
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		if (errno == ENOENT && optional)
			return 0;
		err = -errno;
		pr_err("%s: %s", path, strerror(errno));
		return err;
	}
	if (fstat(fd, &st)) {
		err = -errno;
		pr_err("%s: %s", path, strerror(errno));
		close(fd);
		return err;
	}
	if (!S_ISREG(st.st_mode)) {
		pr_err("%s: not a regular file (%s): a config is one",
		       path, S_ISDIR(st.st_mode) ? "a directory" : S_ISFIFO(st.st_mode) ?
		       "a FIFO" : S_ISCHR(st.st_mode) ? "a character device" :
		       S_ISBLK(st.st_mode) ? "a block device" :
		       S_ISSOCK(st.st_mode) ? "a socket" : "not a file");
		close(fd);
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	}
	f = fdopen(fd, "r");
	if (!f) {
		err = -errno;
		pr_err("%s: %s", path, strerror(errno));
		close(fd);
		return err;
	}
	err = moat_config_parse(f, path, c, msg, sizeof(msg));
	fclose(f);
	if (err)
		pr_err("%s", msg);
	return err;
}

static int read_text(const char *text, const char *name, struct moat_config *c)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	char msg[1024];
	int err;

	if (!f)
		return -errno;
	err = moat_config_parse(f, name, c, msg, sizeof(msg));
	fclose(f);
	if (err)
		pr_err("%s", msg);
	return err;
}

/* Check every merged line as the tree would take it; 0 or the first error. */
static int check_all(struct moatd *d, const struct merged *s)
{
	char why[512], expects[256];
	unsigned int rules[RULES_NR] = { 0 };
	enum rule_family f = RULES_PATH;
	size_t i;
	int err;

	for (i = 0; i < s->n; i++) {
		const struct moat_config_entry *e = &s->v[i].e;
		const char *rule = rules_name(e->path, &f);

		why[0] = '\0';
		if (rule && !moat_knob_find(d->tree, e->path)) {
			/* a rule to create: as rules/ will check it */
			if (!*e->value)
				continue;
			err = rules_check(e->path, e->value, why, sizeof(why));
			if (!err && ++rules[f] > MOATD_MAX_RULES)
				err = -E2BIG;
		} else {
			rules[f] += rule && *e->value;
			err = moat_knob_check_why(d->tree, e->path, e->value, why,
						  sizeof(why));
			if (err == -EINVAL) {
				moat_knob_expects(moat_knob_find(d->tree, e->path),
						  expects, sizeof(expects));
				if (*why)
					snprintf(expects + strlen(expects),
						 sizeof(expects) - strlen(expects), ": %s", why);
				snprintf(why, sizeof(why), "%s", expects);
			}
			if (!err && rule && rules[f] > MOATD_MAX_RULES)
				err = -E2BIG;
		}
		if (!err)
			continue;
		if (err == -ENOENT)
			pr_err("%s:%u: %s: %s", s->v[i].src, e->line, e->path,
			       rule ? "invalid rule name" : "no such knob");
		else if (err == -EPERM)
			pr_err("%s:%u: %s: read-only", s->v[i].src, e->line, e->path);
		else if (err == -E2BIG)
			pr_err("%s:%u: %s: more than %d rules", s->v[i].src, e->line,
			       e->path, MOATD_MAX_RULES);
		else
			pr_err("%s:%u: %s: invalid value '%s': expected %s",
			       s->v[i].src, e->line, e->path, e->value, why);
		return err;
	}
	return 0;
}

static bool wanted_rule(const struct merged *s, const char *path)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (!strcmp(s->v[i].e.path, path))
			return s->v[i].e.value[0];
	return false;
}

struct unwanted {
	const struct merged *s;
	unsigned int changed;
};

static void remove_unwanted(struct moatd *d, const char *path, void *ctx)
{
	struct unwanted *u = ctx;

	if (wanted_rule(u->s, path))
		return;
	pr_info("rule %s removed", path);
	rules_set(d, path, "");
	u->changed++;
}

/*
 * Make the tree hold @s, checked: remove the rules it lacks, then set
 * what differs (creating rules).  Returns how many knobs changed.
 */
static unsigned int apply_checked(struct moatd *d, const struct merged *s)
{
	struct unwanted u = { s, 0 };
	char cur[MOAT_KNOB_VALUE_MAX];
	unsigned int i, changed;

	rules_for_each(d, remove_unwanted, &u);
	changed = u.changed;
	for (i = 0; i < s->n; i++) {
		const struct moat_config_entry *e = &s->v[i].e;

		if (rule_name(e->path) && !*e->value)
			continue;	/* removed above, or never there */
		if (!moat_knob_get(d->tree, e->path, cur, sizeof(cur)) &&
		    !strcmp(cur, e->value))
			continue;
		/* checked: this cannot fail now but for memory */
		if (settings_set(d, e->path, e->value))
			pr_err("%s:%u: %s: not set", s->v[i].src, e->line, e->path);
		else
			changed++;
	}
	return changed;
}

/* Every line of one source, checked as the tree would take it. */
static int check_source(struct moatd *d, const struct moat_config *c,
			const char *src)
{
	struct merged s = {};
	int err = merge(&s, c, src);

	if (!err)
		err = check_all(d, &s);
	free(s.v);
	return err;
}

/*
 * The settings from every source, checked and applied; with @state
 * false, without the state file.  Nothing is changed on an error, and
 * *@state_bad says whether the error was the state file's.  Each file is
 * checked whole, then what they merge to: a bad line in the config is an
 * error even where the command line or the state file sets its knob.
 */
static int apply_all(struct moatd *d, bool state, unsigned int *changed,
		     bool *state_bad)
{
	struct settings *st = ST(d);
	struct moat_config c[3] = {};
	struct merged s = {};
	int err, i;

	*state_bad = false;
	err = read_text(st->defaults, "defaults", &c[0]);
	if (!err)
		err = read_file(st->config_path, !st->config_given, &c[1]);
	if (!err)
		err = check_source(d, &c[1], st->config_path);
	if (!err && state && st->state_path[0]) {
		err = read_file(st->state_path, true, &c[2]);
		if (!err)
			err = check_source(d, &c[2], st->state_path);
		*state_bad = err != 0;
	}
	if (!err)
		err = merge(&s, &c[0], "defaults");
	if (!err)
		err = merge(&s, &c[1], st->config_path);
	if (!err)
		err = merge(&s, &c[2], st->state_path);
	if (!err)
		err = merge(&s, &st->cli, "command line");
	if (!err)
		err = check_all(d, &s);
	if (!err)
		*changed = apply_checked(d, &s);
	free(s.v);
	for (i = 0; i < 3; i++)
		moat_config_free(&c[i]);
	return err;
}

/* The knobs a config file sets, as config text (caller frees). */
static char *snapshot(struct moatd *d)
{
	char *text = NULL;
	size_t len;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	if (moat_config_print(f, d->tree, "", true)) {
		fclose(f);
		free(text);
		return NULL;
	}
	fclose(f);
	return text;
}

/* The config file as it is now: whether it is there, and which it is. */
static bool config_stat(const struct settings *st, struct stat *sb)
{
	if (!stat(st->config_path, sb))
		return true;
	memset(sb, 0, sizeof(*sb));
	return false;
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	       a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

int settings_configure(struct moatd *d, const char *config, bool config_given,
		       const char *state_file)
{
	struct settings *st = ST(d);

	st->config_path = config;
	st->config_given = config_given;
	if ((size_t)snprintf(st->state_path, sizeof(st->state_path), "%s",
			     state_file) >= sizeof(st->state_path)) {
		pr_err("state file %s: path too long", state_file);
		return -ENAMETOOLONG;
	}
	return 0;
}

int settings_cli(struct moatd *d, const char *path, const char *value)
{
	struct settings *st = ST(d);
	struct moat_config_entry *e;
	void *v;

	if (strlen(value) >= sizeof(e->value))
		return -EINVAL;
	v = realloc(st->cli.v, (st->cli.nr + 1) * sizeof(*e));
	if (!v)
		return -ENOMEM;
	st->cli.v = v;
	e = &st->cli.v[st->cli.nr++];
	e->line = 0;
	snprintf(e->path, sizeof(e->path), "%s", path);
	snprintf(e->value, sizeof(e->value), "%s", value);
	return 0;
}

int settings_load(struct moatd *d)
{
	struct settings *st = ST(d);
	unsigned int changed;
	bool state_bad;
	int err;

	st->defaults = snapshot(d);
	if (!st->defaults)
		return -ENOMEM;
	if (st->state_path[0]) {
		char dir[PATH_MAX], *slash;

		snprintf(dir, sizeof(dir), "%s", st->state_path);
		slash = strrchr(dir, '/');
		if (slash)
			*slash = '\0';
		if (slash && mkdir(dir, 0700) && errno != EEXIST) {
			err = -errno;
			pr_err("state directory %s: %s", dir, strerror(errno));
			return err;
		}
	}
	/* before it is read: a change while it is, is seen next period */
	st->seen_there = config_stat(st, &st->seen);
	err = apply_all(d, true, &changed, &state_bad);
	if (!err || !state_bad)
		return err;
	/* A state file moatd cannot use must not keep it from starting. */
	err = apply_all(d, false, &changed, &state_bad);
	if (!err) {
		char bad[PATH_MAX + 8];

		snprintf(bad, sizeof(bad), "%s.bad", st->state_path);
		rename(st->state_path, bad);
		pr_warn("state %s not applied: moved to %s; running on the config alone",
			st->state_path, bad);
	}
	return err;
}

int settings_reload(struct moatd *d)
{
	struct settings *st = ST(d);
	unsigned int changed;
	bool state_bad;
	int err;

	st->seen_there = config_stat(st, &st->seen);
	err = apply_all(d, true, &changed, &state_bad);
	st->reloads[err != 0]++;
	if (err)
		pr_err("reload: %s not applied; the settings are as they were",
		       st->config_path);
	else
		pr_info("reload: %s applied: %u settings changed", st->config_path,
			changed);
	return err;
}

void settings_watch(struct moatd *d)
{
	struct settings *st = ST(d);
	struct stat now;
	bool there;

	if (!st->watch || !st->config_path)
		return;
	there = config_stat(st, &now);
	if (there == st->seen_there && (!there || same_file(&now, &st->seen)))
		return;
	pr_info("config %s %s: reloading", st->config_path,
		!there ? "is gone" : !st->seen_there ? "appeared" : "changed");
	settings_reload(d);
}

size_t settings_local(const struct moatd *d)
{
	return ST(d)->state.nr;
}

unsigned long long settings_reloads(const struct moatd *d, bool applied)
{
	return ST(d)->reloads[!applied];
}

static int write_state(struct moatd *d);

int settings_reset(struct moatd *d, size_t *dropped)
{
	struct settings *st = ST(d);
	struct moat_config was = st->state;
	unsigned int changed;
	bool state_bad;
	int err;

	*dropped = 0;
	if (!st->state_path[0] || !was.nr)
		return 0;
	/* the file first, so that the load below reads it empty */
	memset(&st->state, 0, sizeof(st->state));
	err = write_state(d);
	if (!err) {
		err = apply_all(d, true, &changed, &state_bad);
		if (err)
			pr_err("reset: the settings without moatctl set's do not apply; they are kept");
	} else {
		pr_err("reset: state %s: write: %s", st->state_path, strerror(-err));
	}
	if (err) {
		/* as it was, file and all */
		st->state = was;
		if (write_state(d))
			pr_err("reset: state %s could not be written back: moatctl set's values apply until the next start only",
			       st->state_path);
		return err;
	}
	*dropped = was.nr;
	pr_info("reset: %zu values of moatctl set dropped; %u settings changed: the config file's now",
		was.nr, changed);
	moat_config_free(&was);
	return 0;
}

static int write_state(struct moatd *d)
{
	struct settings *st = ST(d);
	char tmp[PATH_MAX + 8];
	size_t i;
	FILE *f;
	int err = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp", st->state_path);
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	fprintf(f, "# written by moatd: what moatctl set changed; do not edit\n");
	for (i = 0; i < st->state.nr; i++)
		fprintf(f, "%s = %s\n", st->state.v[i].path, st->state.v[i].value);
	if (fflush(f) || fsync(fileno(f)))
		err = -errno;
	if (fclose(f) && !err)
		err = -errno;
	if (!err && rename(tmp, st->state_path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

int settings_persist(struct moatd *d, const char *path, const char *value)
{
	struct settings *st = ST(d);
	struct moat_config_entry *e = NULL;
	size_t i;
	int err;

	if (!st->state_path[0])
		return 0;
	for (i = 0; i < st->state.nr && !e; i++)
		if (!strcmp(st->state.v[i].path, path))
			e = &st->state.v[i];
	if (!e) {
		void *v = realloc(st->state.v, (st->state.nr + 1) * sizeof(*e));

		if (!v)
			return -ENOMEM;
		st->state.v = v;
		e = &st->state.v[st->state.nr++];
		snprintf(e->path, sizeof(e->path), "%s", path);
	}
	snprintf(e->value, sizeof(e->value), "%s", value);
	err = write_state(d);
	if (err)
		pr_err("state %s: write: %s", st->state_path, strerror(-err));
	return err;
}

/* What the state file holds now, so that later sets add to it. */
static int settings_read_state(struct moatd *d)
{
	struct settings *st = ST(d);
	memset(&st->state, 0, sizeof(st->state));
	if (!st->state_path[0])
		return 0;
	return read_file(st->state_path, true, &st->state);
}

/* What the state file holds, so that later sets add to it. */
static int settings_open(struct moatd *d)
{
	return settings_read_state(d);
}

/* "path = value; ..." of the state file: what outranks the config. */
static int show_local(const struct moat_knob *k, char *buf, size_t len)
{
	const struct settings *st = k->owner;
	size_t i, off = 0;
	int n;

	buf[0] = '\0';
	for (i = 0; i < st->state.nr; i++) {
		n = snprintf(buf + off, len - off, "%s%s = %s", i ? "; " : "",
			     st->state.v[i].path, st->state.v[i].value);
		if (n < 0 || (size_t)n >= len - off)
			return -EOVERFLOW;
		off += n;
	}
	return 0;
}

static int settings_init(struct moatd *d)
{
	struct settings *st = ST(d);
	const struct moat_knob knobs[] = {
		{ .path = "settings/watch_config", .type = MOAT_KNOB_U32,
		  .writable = true, .min = 0, .max = 1, .data = &st->watch },
		{ .path = "settings/local", .type = MOAT_KNOB_SHOW, .show = show_local },
	};

	st->watch = 1;
	return moat_knob_add_all(d->tree, "", knobs, sizeof(knobs) / sizeof(knobs[0]),
				 st);
}

static void settings_close(struct moatd *d)
{
	struct settings *st = ST(d);

	free(st->defaults);
	moat_config_free(&st->state);
	moat_config_free(&st->cli);
}

const struct moatd_module settings_module = {
	.name = "settings",
	.size = sizeof(struct settings),
	.init = settings_init,
	.open = settings_open,
	.close = settings_close,
};
