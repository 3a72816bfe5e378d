/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_CAPS_H
#define MOAT_CAPS_H

#include <stdbool.h>
#include <linux/capability.h>

#ifndef CAP_PERFMON
#define CAP_PERFMON 38		/* v5.8 */
#endif
#ifndef CAP_BPF
#define CAP_BPF 39		/* v5.8 */
#endif

/*
 * The capabilities moat's programs use, each with what it is for: a
 * program may run as any uid that has the ones its features need
 * (Documentation/deploy.rst has the matrix).
 */
struct moat_cap_use {
	int cap;		/* CAP_* */
	const char *name;	/* "CAP_BPF" */
	const char *what;	/* what it is for, and what moat does without */
};

/* The capabilities moatd uses, with their reasons; NULL-named at the end. */
extern const struct moat_cap_use moat_cap_uses[];

/** moat_cap_effective() - whether @cap is in this process's effective set. */
bool moat_cap_effective(int cap);

#endif /* MOAT_CAPS_H */
