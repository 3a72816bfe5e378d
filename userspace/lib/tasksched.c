// SPDX-License-Identifier: GPL-2.0-only
/*
 * Threads' scheduling attributes (tasksched.h).  glibc has no wrapper for
 * sched_getattr(2) and sched_setattr(2): struct sched_attr is defined here
 * as the kernel's uapi has it (SCHED_ATTR_SIZE_VER1, 56 bytes).
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "hostroot.h"
#include "tasksched.h"

#ifndef SCHED_IDLE
#define SCHED_IDLE		5
#endif
#define MOAT_SCHED_FLAG_RESET_ON_FORK	0x01ULL
#define PF_KTHREAD		0x00200000u

struct sched_attr_v1 {
	uint32_t size;
	uint32_t sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime, sched_deadline, sched_period;
	uint32_t sched_util_min, sched_util_max;
};

static int getattr(pid_t tid, struct sched_attr_v1 *a)
{
	memset(a, 0, sizeof(*a));
	return syscall(SYS_sched_getattr, tid, a, sizeof(*a), 0) ? -errno : 0;
}

int moat_sched_get(pid_t tid, struct moat_sched *s)
{
	const struct moat_sched_caps *caps = moat_sched_caps();
	struct sched_attr_v1 a;
	int err = getattr(tid, &a);

	if (err)
		return err;
	s->policy = a.sched_policy;
	if (a.sched_flags & MOAT_SCHED_FLAG_RESET_ON_FORK)
		s->policy |= MOAT_SCHED_RESET_ON_FORK;
	s->nice = a.sched_nice;
	s->slice_ns = a.sched_runtime;
	if (!caps->slice || a.sched_runtime == caps->base_slice_ns ||
	    (a.sched_policy != SCHED_OTHER && a.sched_policy != SCHED_BATCH))
		s->slice_ns = 0;
	return 0;
}

int moat_sched_set(pid_t tid, const struct moat_sched *s)
{
	struct sched_attr_v1 a = {
		.size = sizeof(a),
		.sched_policy = s->policy & ~MOAT_SCHED_RESET_ON_FORK,
		.sched_flags = s->policy & MOAT_SCHED_RESET_ON_FORK ?
			       MOAT_SCHED_FLAG_RESET_ON_FORK : 0,
		.sched_nice = s->nice,
		.sched_runtime = s->slice_ns,
	};

	return syscall(SYS_sched_setattr, tid, &a, 0) ? -errno : 0;
}

static void probe(struct moat_sched_caps *caps)
{
	struct sched_attr_v1 cur, a;
	unsigned long long base;
	int err;

	err = getattr(0, &cur);
	if (!err && cur.sched_policy != SCHED_OTHER && cur.sched_policy != SCHED_BATCH)
		err = -EPERM;	/* moatd runs with a policy of its own */
	if (err) {
		caps->err = err;
		return;
	}
	a = cur;
	a.size = sizeof(a);
	a.sched_runtime = 0;
	err = syscall(SYS_sched_setattr, 0, &a, 0) ? -errno : getattr(0, &a);
	base = a.sched_runtime;
	a.size = sizeof(a);
	/* a slice no default can be: 0.1 ms above the base, at least 2.5 ms */
	a.sched_runtime = (base > 2400000 ? base : 2400000) + 100000;
	if (!err)
		err = syscall(SYS_sched_setattr, 0, &a, 0) ? -errno : 0;
	if (!err) {
		unsigned long long want = a.sched_runtime;

		err = getattr(0, &a);
		caps->slice = !err && base && a.sched_runtime == want;
		caps->base_slice_ns = caps->slice ? base : 0;
	}
	caps->err = err;
	/* moatd's own slice as it was */
	cur.size = sizeof(cur);
	if (cur.sched_runtime == base)
		cur.sched_runtime = 0;
	syscall(SYS_sched_setattr, 0, &cur, 0);
}

const struct moat_sched_caps *moat_sched_caps(void)
{
	static struct moat_sched_caps caps;
	static bool probed;

	if (!probed) {
		probe(&caps);
		probed = true;
	}
	return &caps;
}

int moat_task_read(pid_t tid, struct moat_task *t)
{
	char path[64], buf[1024], line[256], *p;
	unsigned long long start;
	unsigned int flags;
	size_t n;
	FILE *f;
	int ppid, tgid = -1;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)tid);
	f = moat_host_fopen(path);
	if (!f)
		return errno == ESRCH ? -ENOENT : -errno;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* the name may hold anything, ')' too: the fields follow the last */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 1, " %*c %d %*d %*d %*d %*d %u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
			 &ppid, &flags, &start) != 3)
		return n ? -EBADMSG : -ENOENT;	/* empty: it just exited */
	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	f = moat_host_fopen(path);
	if (!f)
		return errno == ESRCH ? -ENOENT : -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	if (tgid < 0)
		return -ENOENT;
	*t = (struct moat_task){ .tid = tid, .tgid = tgid, .ppid = ppid,
				 .start = start, .kthread = flags & PF_KTHREAD };
	return 0;
}

int moat_sched_format(char *buf, size_t len, const struct moat_sched *s)
{
	return snprintf(buf, len, "%u/%d/%llu", s->policy, s->nice, s->slice_ns) >=
	       (int)len ? -ENAMETOOLONG : 0;
}

int moat_sched_parse(const char *buf, struct moat_sched *s)
{
	char tail;

	if (sscanf(buf, "%u/%d/%llu%c", &s->policy, &s->nice, &s->slice_ns,
		   &tail) != 3 || s->nice < -20 || s->nice > 19)
		return -EINVAL;
	return 0;
}

bool moat_sched_equal(const struct moat_sched *a, const struct moat_sched *b)
{
	return a->policy == b->policy && a->nice == b->nice &&
	       a->slice_ns == b->slice_ns;
}

const char *moat_sched_policy_name(unsigned int policy)
{
	static const char *const names[] = {
		"normal", "fifo", "rr", "batch", "iso", "idle", "deadline", "ext",
	};

	policy &= ~MOAT_SCHED_RESET_ON_FORK;
	return policy < sizeof(names) / sizeof(names[0]) ? names[policy] : "unknown";
}
