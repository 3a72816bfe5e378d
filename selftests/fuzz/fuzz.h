/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_FUZZ_H
#define MOAT_FUZZ_H

/*
 * libFuzzer targets for the parsers that take outside input (see
 * Documentation/testing.rst, "Fuzzing").  Each target is built with
 * AddressSanitizer and UndefinedBehaviorSanitizer: a crash, a report or
 * a broken invariant (asserted with fuzz_check()) is a finding.
 */
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A finding that is not a crash: say what, then abort for libFuzzer. */
#define fuzz_check(cond)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: invariant broken: %s\n",	\
				__FILE__, __LINE__, #cond);		\
			abort();					\
		}							\
	} while (0)

/* The input as a NUL-terminated string (to free); NULL when too large. */
static inline char *fuzz_string(const uint8_t *data, size_t size, size_t max)
{
	char *s;

	if (size > max)
		return NULL;
	s = malloc(size + 1);
	if (!s)
		return NULL;
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* The input as a FILE to read, as the parsers read /proc files. */
static inline FILE *fuzz_file(const uint8_t *data, size_t size)
{
	return size ? fmemopen((void *)data, size, "r") : NULL;
}

#endif /* MOAT_FUZZ_H */
