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

#endif /* MOATD_SETTINGS_H */
