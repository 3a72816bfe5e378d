/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOATD_SETTINGS_H
#define MOATD_SETTINGS_H

/*
 * The settings module: where the writable knobs' values come from (the
 * defaults, the config file, the state file, the command line), at start
 * and on SIGHUP, all or nothing; and the state file moatctl set writes.
 */
#include <stdbool.h>
#include "moatd.h"

extern const struct moatd_module settings_module;

/**
 * settings_set() - set a knob as moatctl and the config file do: a write
 * to rules/<name> creates the rule, and "" removes it.  Logged.
 */
int settings_set(struct moatd *d, const char *path, const char *val);

/* Where the config file and the state file are ("" : none kept). */
int settings_configure(struct moatd *d, const char *config, bool config_given,
		       const char *state_file);
/* A command-line option's knob value: it wins over every file. */
int settings_cli(struct moatd *d, const char *path, const char *value);
/* Defaults, files and command line, at start: 0, or the error (said). */
int settings_load(struct moatd *d);
/* The same on SIGHUP: all or nothing. */
int settings_reload(struct moatd *d);
/* Record that `moatctl set` gave @path @value, in the state file. */
int settings_persist(struct moatd *d, const char *path, const char *value);
/*
 * Each period: the config file loaded again, as on SIGHUP, when it is
 * another file, was written, appeared or went since the last load
 * (settings/watch_config).
 */
void settings_watch(struct moatd *d);
/*
 * moatctl reset: drop every value `moatctl set` kept, and load the
 * settings without them; all or nothing.  *@dropped: how many.
 */
int settings_reset(struct moatd *d, size_t *dropped);
/* How many values `moatctl set` keeps over the config file. */
size_t settings_local(const struct moatd *d);
/* Reloads (SIGHUP, the watch, reset) applied, or refused. */
unsigned long long settings_reloads(const struct moatd *d, bool applied);

#endif /* MOATD_SETTINGS_H */
