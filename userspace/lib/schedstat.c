// SPDX-License-Identifier: GPL-2.0-only
/*
 * Run-queue delay from the scheduler's per-task sched_info, read from
 * /proc/<tid>/schedstat: the fallback where BPF cannot load.  See
 * schedstat.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cgroup.h"
#include "hostroot.h"
#include "log.h"
#include "schedstat.h"

struct moat_schedstat {
	char proc[PATH_MAX];	/* /proc below the host root */
};

/* @path's first line into @buf (a /proc file is read in one go). */
static int read_line(const char *path, char *buf, size_t len)
{
	ssize_t n;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	err = n < 0 ? -errno : 0;
	close(fd);
	if (err)
		return err;
	buf[n] = '\0';
	return 0;
}

int moat_schedstat_parse(const char *schedstat, const char *stat,
			 struct moat_ts_task *out)
{
	unsigned long long oncpu, delay, count, start;
	const char *p;
	char *end;
	int field;

	if (sscanf(schedstat, "%llu %llu %llu", &oncpu, &delay, &count) != 3)
		return -EINVAL;
	/* "pid (comm) state ppid ...": starttime is field 22, the 20th
	   after the command's closing parenthesis */
	p = strrchr(stat, ')');
	if (!p)
		return -EINVAL;
	p++;
	for (field = 3; field < 22; field++) {
		p += strspn(p, " ");
		p += strcspn(p, " ");
		if (!*p)
			return -EINVAL;
	}
	p += strspn(p, " ");
	if (*p < '0' || *p > '9')
		return -EINVAL;
	errno = 0;
	start = strtoull(p, &end, 10);
	if (errno || (*end && *end != ' ' && *end != '\n'))
		return -EINVAL;
	out->delay_ns = delay;
	out->count = count;
	out->start = start;
	return 0;
}

int moat_schedstat_task(struct moat_schedstat *ss, pid_t tid,
			struct moat_ts_task *out)
{
	char path[PATH_MAX + 32], sched[128], stat[2048];
	int err;

	snprintf(path, sizeof(path), "%s/%d/schedstat", ss->proc, (int)tid);
	err = read_line(path, sched, sizeof(sched));
	if (!err) {
		snprintf(path, sizeof(path), "%s/%d/stat", ss->proc, (int)tid);
		err = read_line(path, stat, sizeof(stat));
	}
	if (err == -ENOENT)
		return -ESRCH;		/* it exited since the listing */
	if (err)
		return err;
	if (moat_schedstat_parse(sched, stat, out))
		return -EINVAL;
	out->tid = tid;
	return 0;
}

int moat_schedstat_open(struct moat_schedstat **out)
{
	struct moat_schedstat *ss = calloc(1, sizeof(*ss));
	char path[PATH_MAX + 32], line[128];
	unsigned long long oncpu, delay, count;
	int err;

	if (!ss)
		return -ENOMEM;
	err = moat_host_path(ss->proc, sizeof(ss->proc), "/proc");
	if (err)
		goto fail;
	/* this kernel, whichever /proc: moatd's own thread has run */
	snprintf(path, sizeof(path), "/proc/thread-self/schedstat");
	err = read_line(path, line, sizeof(line));
	if (err) {
		pr_warn("schedstat: %s: %s%s", path, strerror(-err),
			err == -ENOENT ? " (a kernel without CONFIG_SCHED_INFO)" : "");
		goto fail;
	}
	if (sscanf(line, "%llu %llu %llu", &oncpu, &delay, &count) != 3) {
		pr_warn("schedstat: %s: '%.60s' is not three counters", path, line);
		err = -EINVAL;
		goto fail;
	}
	if (!count) {
		pr_warn("schedstat: %s reads 0 0 0: this kernel keeps sched_info only with kernel.task_delayacct or kernel.sched_schedstats on (before v5.14), which moat does not set",
			path);
		err = -ENODATA;
		goto fail;
	}
	*out = ss;
	return 0;
fail:
	free(ss);
	return err;
}

void moat_schedstat_close(struct moat_schedstat *ss)
{
	free(ss);
}

/* Slot i counts waits in [2^i, 2^(i+1)) ns (hist.h). */
void moat_ts_add_waits(struct moat_rqlat_hist *h, __u64 n, __u64 total_ns)
{
	double mean;
	int slot;

	if (!n)
		return;
	mean = (double)total_ns / n;
	slot = mean < 2 ? 0 : (int)floor(log2(mean));
	if (slot >= MOAT_HIST_SLOTS)
		slot = MOAT_HIST_SLOTS - 1;
	h->slots[slot] += n;
	h->count += n;
	h->sum_ns += total_ns;
}

static int cmp_tid(const void *a, const void *b)
{
	const struct moat_ts_task *x = a, *y = b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

int moat_schedstat_group(struct moat_schedstat *ss, const char *dir, bool v2,
			 struct moat_ts_group *g)
{
	struct moat_ts_task *now, *was;
	char path[4096];
	__u32 *tids;
	size_t n = 0, i;
	long nt;

	snprintf(path, sizeof(path), "%s/%s", dir, v2 ? "cgroup.threads" : "tasks");
	nt = moat_read_tids(path, &tids);
	if (nt < 0)
		return nt;
	now = malloc((nt ? nt : 1) * sizeof(*now));
	if (!now) {
		free(tids);
		return -ENOMEM;
	}
	for (i = 0; i < (size_t)nt; i++)
		if (!moat_schedstat_task(ss, tids[i], &now[n]))
			n++;	/* else it exited since the listing */
	free(tids);	/* sorted: so is now[] */
	for (i = 0; i < n; i++) {
		was = g->n ? bsearch(&now[i], g->tasks, g->n, sizeof(*now),
				     cmp_tid) : NULL;
		/* first seen, or another task under a reused tid: baseline */
		if (!was || was->start != now[i].start ||
		    now[i].count < was->count || now[i].delay_ns < was->delay_ns)
			continue;
		moat_ts_add_waits(&g->cum, now[i].count - was->count,
				  now[i].delay_ns - was->delay_ns);
	}
	free(g->tasks);
	g->tasks = now;
	g->n = n;
	return 0;
}

void moat_ts_group_free(struct moat_ts_group *g)
{
	free(g->tasks);
	g->tasks = NULL;
	g->n = 0;
}
