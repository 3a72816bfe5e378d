// SPDX-License-Identifier: GPL-2.0-only
/* The kernel's CPU lists ("0-3,6\n"): how many CPUs one names. */
#include <errno.h>
#include <limits.h>
#include "cpulist.h"

/* A CPU number at *p, digits only; advances *p.  -1 where none. */
static long cpu_number(const char **p)
{
	long v = 0;

	if (**p < '0' || **p > '9')
		return -1;
	for (; **p >= '0' && **p <= '9'; (*p)++) {
		if (v > (INT_MAX - (**p - '0')) / 10)
			return -1;	/* no kernel numbers CPUs past int */
		v = v * 10 + (**p - '0');
	}
	return v;
}

long moat_cpulist_count(const char *s)
{
	const char *p = s;
	long a, b, count = 0;

	for (;;) {
		a = b = cpu_number(&p);
		if (a < 0)
			return -EINVAL;
		if (*p == '-') {
			p++;
			b = cpu_number(&p);
			if (b < a)
				return -EINVAL;
		}
		count += b - a + 1;
		if (*p != ',')
			break;
		p++;
	}
	if (*p == '\n')
		p++;
	return *p ? -EINVAL : count;
}
