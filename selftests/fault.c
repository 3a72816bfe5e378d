// SPDX-License-Identifier: GPL-2.0-only
/*
 * A fault for the tests to inject into the real moatd, preloaded
 * (LD_PRELOAD=libmoat-fault.so): the environment names one call and
 * which of its calls fails, with which errno,
 *
 *   MOAT_FAULT=<function>:<nth>[:<errno>[:<file>]]    e.g. bpf_iter_create:6:5
 *
 * and, where <file> is given, only the calls made while it exists count:
 * the test creates it when it has seen what it needs to before the fault
 * (a count of calls from the start is a time, which a slow machine
 * stretches),
 * and every other call goes through to the real one.  It stands in for
 * what this machine cannot be made to do on cue: a cgroup iterator's read
 * that fails once (the kernel's -EAGAIN or -ENOMEM), a timer the kernel
 * refuses.  Only functions that AddressSanitizer does not intercept can
 * be interposed here (the sanitized moatd links its interceptors into
 * the executable, and the executable's symbols come first), so no libc
 * I/O.  The fault says itself on stderr, into moatd's log.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/timerfd.h>

struct fault {
	char fn[64];
	char arm[256];		/* "": armed from the start */
	unsigned long nth, calls;
	int err;
	bool parsed;
};

static struct fault fault;

/* Whether this call of @fn is the one to fail; then errno is set. */
static bool fails(const char *fn)
{
	const char *spec = getenv("MOAT_FAULT");

	if (!fault.parsed) {
		fault.parsed = true;
		fault.err = EIO;
		if (!spec || sscanf(spec, "%63[^:]:%lu:%d:%255s", fault.fn, &fault.nth,
				    &fault.err, fault.arm) < 2)
			fault.fn[0] = '\0';
	}
	if (strcmp(fault.fn, fn) || (fault.arm[0] && access(fault.arm, F_OK)) ||
	    ++fault.calls != fault.nth)
		return false;
	fprintf(stderr, "libmoat-fault: %s call %lu fails: %s\n", fn, fault.calls,
		strerror(fault.err));
	errno = fault.err;
	return true;
}

#define REAL(fn) ((__typeof__(&fn))dlsym(RTLD_NEXT, #fn))

int bpf_iter_create(int link_fd);
int bpf_iter_create(int link_fd)
{
	if (fails("bpf_iter_create"))
		return -errno;	/* libbpf's convention: -errno, and errno set */
	return REAL(bpf_iter_create)(link_fd);
}

int timerfd_settime(int fd, int flags, const struct itimerspec *new,
		    struct itimerspec *old)
{
	if (fails("timerfd_settime"))
		return -1;
	return REAL(timerfd_settime)(fd, flags, new, old);
}
