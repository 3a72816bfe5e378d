// SPDX-License-Identifier: GPL-2.0-only
/*
 * Where the writable knobs' values come from, in order: their defaults,
 * the config file, then the state file, which holds what `moatctl set`
 * changed (not `set --runtime`) so that it survives a restart.  SIGHUP
 * does it all again, all or nothing.  Both files have the config format;
 * the state file is written by moatd alone, atomically.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "config.h"
#include "log.h"
#include "moatd.h"

/* "rules/<name>" -> "<name>", or NULL for other paths. */
static const char *rule_name(const char *path)
{
	if (strncmp(path, "rules/", 6) || strchr(path + 6, '/'))
		return NULL;
	return path + 6;
}

/*
 * Apply @c, named @name in messages: create the rules it names, check
 * every line, set them all or none.  "rules/x = " removes rule x.
 */
static int apply(struct moatd *d, struct moat_config *c, const char *name)
{
	char msg[1024], created[MOATD_MAX_RULES][MOAT_ID_MAX];
	unsigned int nr_created = 0, i;
	int err = 0;

	for (i = 0; i < c->nr && !err; i++) {
		const char *rule = rule_name(c->v[i].path);

		if (!rule || moat_knob_find(d->tree, c->v[i].path) ||
		    !c->v[i].value[0])
			continue;
		err = rules_create(d, rule);
		if (err)
			pr_err("%s:%u: %s: %s", name, c->v[i].line, c->v[i].path,
			       err == -E2BIG ? "too many rules" : "invalid rule name");
		else
			strcpy(created[nr_created++], rule);
	}
	msg[0] = '\0';
	if (!err) {
		/* A removal of a rule that is not there has nothing to do. */
		size_t j = 0;

		for (i = 0; i < c->nr; i++)
			if (!rule_name(c->v[i].path) || c->v[i].value[0] ||
			    moat_knob_find(d->tree, c->v[i].path))
				c->v[j++] = c->v[i];
		c->nr = j;
		err = moat_config_apply(d->tree, c, name, msg, sizeof(msg));
	}
	if (err && msg[0])
		pr_err("%s", msg);
	for (i = 0; err && i < nr_created; i++)
		rules_remove(d, created[i]);
	for (i = 0; !err && i < c->nr; i++)
		if (rule_name(c->v[i].path) && !c->v[i].value[0])
			rules_remove(d, rule_name(c->v[i].path));
	return err;
}

/* Parse and apply what @f holds; closes @f. */
static int apply_stream(struct moatd *d, FILE *f, const char *name)
{
	struct moat_config c;
	char msg[1024];
	int err;

	err = moat_config_parse(f, name, &c, msg, sizeof(msg));
	fclose(f);
	if (err) {
		pr_err("%s", msg);
		return err;
	}
	err = apply(d, &c, name);
	moat_config_free(&c);
	return err;
}

/* Parse and apply a file; a missing file is fine when @optional. */
static int apply_file(struct moatd *d, const char *path, bool optional)
{
	FILE *f = fopen(path, "re");
	int err;

	if (!f) {
		if (errno == ENOENT && optional)
			return 0;
		err = -errno;
		pr_err("%s: %s", path, strerror(errno));
		return err;
	}
	return apply_stream(d, f, path);
}

static int apply_text(struct moatd *d, const char *text, const char *name)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");

	return f ? apply_stream(d, f, name) : -errno;
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

static void remove_all_rules(struct moatd *d)
{
	unsigned int i;

	for (i = 0; i < MOATD_MAX_RULES; i++)
		if (d->rules[i].used)
			rules_remove(d, d->rules[i].rule.name);
}

/* Defaults, then the config file, then the state file. */
static int apply_all(struct moatd *d)
{
	int err;

	remove_all_rules(d);
	err = apply_text(d, d->defaults, "defaults");
	if (!err)
		err = apply_file(d, d->config_path, !d->config_given);
	if (!err && d->state_path[0])
		err = apply_file(d, d->state_path, true);
	return err;
}

int settings_load(struct moatd *d)
{
	int err;

	d->defaults = snapshot(d);
	if (!d->defaults)
		return -ENOMEM;
	if (d->state_path[0]) {
		char dir[PATH_MAX], *slash;

		snprintf(dir, sizeof(dir), "%s", d->state_path);
		slash = strrchr(dir, '/');
		if (slash)
			*slash = '\0';
		if (slash && mkdir(dir, 0700) && errno != EEXIST) {
			err = -errno;
			pr_err("state directory %s: %s", dir, strerror(errno));
			return err;
		}
	}
	err = apply_file(d, d->config_path, !d->config_given);
	if (err || !d->state_path[0])
		return err;
	/* A state file moatd cannot use must not keep it from starting. */
	if (apply_file(d, d->state_path, true)) {
		char bad[PATH_MAX + 8];

		snprintf(bad, sizeof(bad), "%s.bad", d->state_path);
		rename(d->state_path, bad);
		pr_warn("state %s not applied: moved to %s; running on the config alone",
			d->state_path, bad);
		remove_all_rules(d);
		apply_text(d, d->defaults, "defaults");
		return apply_file(d, d->config_path, !d->config_given);
	}
	return 0;
}

int settings_reload(struct moatd *d)
{
	char *before = snapshot(d);
	int err;

	if (!before)
		return -ENOMEM;
	err = apply_all(d);
	if (err) {
		remove_all_rules(d);
		apply_text(d, before, "running settings");
		pr_err("reload: not applied; the settings are as they were");
	} else {
		pr_info("reload: %s applied", d->config_path);
	}
	free(before);
	return err;
}

static int write_state(struct moatd *d)
{
	char tmp[PATH_MAX + 8];
	size_t i;
	FILE *f;
	int err = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp", d->state_path);
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	fprintf(f, "# written by moatd: what moatctl set changed; do not edit\n");
	for (i = 0; i < d->state.nr; i++)
		fprintf(f, "%s = %s\n", d->state.v[i].path, d->state.v[i].value);
	if (fflush(f) || fsync(fileno(f)))
		err = -errno;
	if (fclose(f) && !err)
		err = -errno;
	if (!err && rename(tmp, d->state_path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

int settings_persist(struct moatd *d, const char *path, const char *value)
{
	struct moat_config_entry *e = NULL;
	size_t i;
	int err;

	if (!d->state_path[0])
		return 0;
	for (i = 0; i < d->state.nr && !e; i++)
		if (!strcmp(d->state.v[i].path, path))
			e = &d->state.v[i];
	if (!e) {
		void *v = realloc(d->state.v, (d->state.nr + 1) * sizeof(*e));

		if (!v)
			return -ENOMEM;
		d->state.v = v;
		e = &d->state.v[d->state.nr++];
		snprintf(e->path, sizeof(e->path), "%s", path);
	}
	snprintf(e->value, sizeof(e->value), "%s", value);
	err = write_state(d);
	if (err)
		pr_err("state %s: write: %s", d->state_path, strerror(-err));
	return err;
}

/* What the state file holds now, so that later sets add to it. */
int settings_read_state(struct moatd *d)
{
	char msg[1024];
	FILE *f;
	int err;

	memset(&d->state, 0, sizeof(d->state));
	if (!d->state_path[0])
		return 0;
	f = fopen(d->state_path, "re");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	err = moat_config_parse(f, d->state_path, &d->state, msg, sizeof(msg));
	fclose(f);
	return err;
}

void settings_free(struct moatd *d)
{
	free(d->defaults);
	moat_config_free(&d->state);
}
