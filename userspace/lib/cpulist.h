/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_CPULIST_H
#define MOAT_CPULIST_H

/*
 * The kernel's CPU lists, as /sys/devices/system/cpu/online and the like
 * print them (cputopology.rst, the %*pbl format): CPU numbers and
 * ranges "A-B" separated by commas, e.g. "0-3,6\n".
 */

/**
 * moat_cpulist_count() - how many CPUs the list @s names.  One newline
 * may end it.
 * Return: the count, or -EINVAL where @s is not such a list (empty, a
 * sign, a space, a range that runs backwards, anything after the list).
 */
long moat_cpulist_count(const char *s);

#endif /* MOAT_CPULIST_H */
