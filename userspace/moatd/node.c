// SPDX-License-Identifier: GPL-2.0-only
/*
 * The node's own signals, a source: CPU utilization (/proc/stat), memory
 * (/proc/meminfo) and pressure (/proc/pressure/cpu, memory and io, per
 * accounting/psi.rst), read once a period into the period's record; and
 * its knobs under node/.
 *
 * And the pods' memory: kubelet bounds all pods together by kubepods'
 * memory limit (node allocatable, --enforce-node-allocatable=pods, its
 * default), which they reach before the node runs short.  Their working
 * set is kubelet's own eviction figure, usage less inactive file pages
 * (memory.current less memory.stat's inactive_file; v1
 * memory.usage_in_bytes less total_inactive_file); what is left under the
 * limit is the pods' memory available.  kubepods is found above the pods
 * moatd knows: a guaranteed pod's parent, another's grandparent.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cgroup.h"
#include "cpulist.h"
#include "hostroot.h"
#include "log.h"
#include "node.h"

/*
 * The files, opened once and re-read with pread() at offset 0, which
 * makes procfs's seq_file generate them afresh (seq_read_iter() resets
 * its iterator at offset 0).  With the cgroup iterator at 500 groups the
 * node's stage was a fifth of moatd's CPU per cycle, and an open() and a
 * close() of each file each period a quarter of that.
 */
enum node_file { NF_STAT, NF_MEMINFO, NF_PSI_CPU, NF_PSI_MEMORY, NF_PSI_IO, NF_NR };
static const char *const node_path[NF_NR] = {
	"/proc/stat", "/proc/meminfo", "/proc/pressure/cpu",
	"/proc/pressure/memory", "/proc/pressure/io",
};

/* kubepods' memory files */
enum pods_file { PF_LIMIT, PF_USAGE, PF_STAT, PF_NR };
static const char *const pods_v2[PF_NR] = { "memory.max", "memory.current", "memory.stat" };
static const char *const pods_v1[PF_NR] = {
	"memory.limit_in_bytes", "memory.usage_in_bytes", "memory.stat",
};

struct node {
	__u64 cpu_busy, cpu_total;	/* /proc/stat jiffies at the last read */
	/* memory's "some total=" (us) at the last read, and when; at 0: none */
	__u64 mem_some_us;
	double mem_some_at;
	int fd[NF_NR];			/* -1: not open */
	int online;			/* /sys/devices/system/cpu/online */
	char pods[PATH_MAX];		/* kubepods' hierarchy path; "": none */
	int pods_fd[PF_NR];		/* its files; -1: not open */
};

static const char *const psi_res[] = { "cpu", "memory", "io" };

/*
 * The start of file @f, NUL-terminated, in @buf: what the lines read
 * here need (/proc/stat's first line; meminfo's SwapTotal is its 15th
 * line or so, well inside 2 KiB).
 */
static int reread(const struct node *n, enum node_file f, char *buf, size_t len)
{
	ssize_t r;

	if (n->fd[f] < 0)
		return -ENOENT;
	r = pread(n->fd[f], buf, len - 1, 0);
	if (r < 0)
		return -errno;
	buf[r] = '\0';
	return 0;
}

/* "some avg10=1.23 ..." from /proc/pressure/<res>, per psi.rst. */
static double read_psi_some_avg10(const struct node *n, size_t res)
{
	char buf[256];
	double v;

	if (reread(n, NF_PSI_CPU + res, buf, sizeof(buf)))
		return NAN;
	return sscanf(buf, "some avg10=%lf", &v) == 1 ? v : NAN;
}

/*
 * The share of the time since the last read during which some task
 * stalled on memory, percent: the growth of "some ... total=<us>" over
 * the seconds between the reads (psi.rst), the groups' memory_pressure_pct
 * (observe.c) for the whole node.  NAN before two reads.  Where
 * avg10, a ten-second average, still shows a stall for seconds after
 * it ended, this is the window's, as the groups' are, so the two can be
 * set against each other (enforce.c: the node's row).
 */
static double read_psi_memory_pct(struct node *n)
{
	char buf[256];
	const char *t;
	unsigned long long us;
	double at = moatd_mono_s(), pct = NAN;

	if (reread(n, NF_PSI_MEMORY, buf, sizeof(buf)) || strncmp(buf, "some ", 5) ||
	    !(t = strstr(buf, " total=")) || sscanf(t, " total=%llu", &us) != 1) {
		n->mem_some_at = 0;
		return NAN;
	}
	if (n->mem_some_at > 0 && at > n->mem_some_at && us >= n->mem_some_us)
		pct = fmin(100, (us - n->mem_some_us) / 1e4 / (at - n->mem_some_at));
	n->mem_some_us = us;
	n->mem_some_at = at;
	return pct;
}

/* Busy and total jiffies of all CPUs, from /proc/stat's "cpu" line. */
static int read_cpu_jiffies(const struct node *n, __u64 *busy, __u64 *total)
{
	unsigned long long v[10] = {};
	char buf[512];
	int i, got, err;

	err = reread(n, NF_STAT, buf, sizeof(buf));
	if (err)
		return err;
	got = sscanf(buf, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
		     &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7],
		     &v[8], &v[9]);
	if (got < 4)
		return -ENODATA;
	/* guest and guest_nice (8, 9) are already in user and nice. */
	*total = 0;
	for (i = 0; i < 8; i++)
		*total += v[i];
	*busy = *total - v[3] - v[4];	/* less idle and iowait */
	return 0;
}

/*
 * The number after "@key@sep" at a line's start in @buf, times @scale;
 * NAN where missing.  meminfo's "MemTotal:   123 kB" (':', 1024) and
 * memory.stat's "inactive_file 123" (' ', 1).
 */
static double line_value(const char *buf, const char *key, char sep, double scale)
{
	size_t klen = strlen(key);
	unsigned long long v;
	const char *p;

	for (p = buf; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, klen) && p[klen] == sep)
			return sscanf(p + klen + 1, "%llu", &v) == 1 ? v * scale : NAN;
	return NAN;
}

/* MemTotal, MemAvailable and SwapTotal, in bytes; NAN where missing. */
static void read_meminfo(const struct node *n, double *total, double *avail,
			 double *swap)
{
	char buf[2048];

	*total = *avail = *swap = NAN;
	if (reread(n, NF_MEMINFO, buf, sizeof(buf)))
		return;
	*total = line_value(buf, "MemTotal", ':', 1024);
	*avail = line_value(buf, "MemAvailable", ':', 1024);
	*swap = line_value(buf, "SwapTotal", ':', 1024);
}

/*
 * The CPUs online, from the list sysconf(_SC_NPROCESSORS_ONLN) reads
 * ("0-3,6\n", cputopology.rst), kept open: sysconf() opens it each call,
 * 4% of moatd's CPU at 500 groups.  sysconf()'s answer where it fails.
 */
static long online_cpus(const struct node *n)
{
	char buf[4096];
	ssize_t r = n->online < 0 ? -1 : pread(n->online, buf, sizeof(buf) - 1, 0);
	long count;

	if (r <= 0)
		return sysconf(_SC_NPROCESSORS_ONLN);
	buf[r] = '\0';
	count = moat_cpulist_count(buf);
	return count > 0 ? count : sysconf(_SC_NPROCESSORS_ONLN);
}

static void pods_close(struct node *n)
{
	size_t i;

	for (i = 0; i < PF_NR; i++) {
		if (n->pods_fd[i] >= 0)
			close(n->pods_fd[i]);
		n->pods_fd[i] = -1;
	}
	n->pods[0] = '\0';
}

/* kubepods' hierarchy path, from the first pod moatd knows; false: none. */
static bool pods_root(const struct moatd *d, char *path, size_t len)
{
	size_t i;

	for (i = 0; i < d->nr_groups; i++) {
		const struct moatd_group *g = d->groups[i];
		unsigned int up = g->gid.kube.qos == MOAT_KUBE_GUARANTEED ? 1 : 2;
		char *slash;

		if (g->gid.kind != MOAT_GROUP_POD || g->gid.kube.level != MOAT_KUBE_POD ||
		    snprintf(path, len, "%s", g->path) >= (int)len)
			continue;
		while (up--) {
			slash = strrchr(path, '/');
			if (!slash)
				break;
			*slash = '\0';
		}
		if (!path[0])
			strcpy(path, "/");
		return true;
	}
	return false;
}

/*
 * The pods' memory limit and what is available under it, in bytes; NAN
 * where kubepods has no limit (or one over the node's memory), where it
 * is not found, or on a v1 node without the memory controller.
 */
static void read_pods_memory(struct moatd *d, struct node *n, double mem_total,
			     double *limit, double *avail)
{
	const struct moat_cg_hierarchy *h = d->cpu->v2 ? d->cpu : d->memory;
	const char *const *files = d->cpu->v2 ? pods_v2 : pods_v1;
	char path[PATH_MAX], dir[PATH_MAX], full[PATH_MAX + 32], buf[8192];
	double lim = NAN, usage = NAN, inactive = NAN;
	size_t i;
	ssize_t r;

	*limit = *avail = NAN;
	if (!h || !pods_root(d, path, sizeof(path))) {
		pods_close(n);
		return;
	}
	if (strcmp(path, n->pods)) {
		pods_close(n);
		if (moat_cgroup_dir(h, path, dir, sizeof(dir)))
			return;
		for (i = 0; i < PF_NR; i++) {
			snprintf(full, sizeof(full), "%s/%s", dir, files[i]);
			n->pods_fd[i] = open(full, O_RDONLY | O_CLOEXEC);
		}
		strcpy(n->pods, path);
	}
	for (i = 0; i < PF_NR; i++) {
		r = n->pods_fd[i] < 0 ? -1 : pread(n->pods_fd[i], buf, sizeof(buf) - 1, 0);
		if (r <= 0) {
			pods_close(n);	/* gone, or never there: found afresh */
			return;
		}
		buf[r] = '\0';
		if (i == PF_LIMIT)
			lim = strncmp(buf, "max", 3) ? strtod(buf, NULL) : INFINITY;
		else if (i == PF_USAGE)
			usage = strtod(buf, NULL);
		else
			inactive = line_value(buf, d->cpu->v2 ? "inactive_file" :
							       "total_inactive_file", ' ', 1);
	}
	if (isnan(lim) || isnan(usage) || isinf(lim) || lim <= 0 || (mem_total > 0 && lim >= mem_total))
		return;
	*limit = lim;
	*avail = fmax(0, lim - fmax(0, usage - (isnan(inactive) ? 0 : inactive)));
}

void node_sample(struct moatd *d, struct node_sample *w)
{
	struct node *n = moatd_mod(d, MOD_NODE);
	__u64 busy = 0, total = 0;
	size_t i;

	w->ncpus = online_cpus(n);
	for (i = 0; i < 3; i++)
		w->psi_some_avg10[i] = read_psi_some_avg10(n, i);
	w->memory_pressure_pct = read_psi_memory_pct(n);
	read_meminfo(n, &w->mem_total, &w->mem_available, &w->swap_total);
	read_pods_memory(d, n, w->mem_total, &w->pods_mem_limit, &w->pods_mem_available);
	w->cpu_usage = NAN;
	if (read_cpu_jiffies(n, &busy, &total))
		return;
	if (n->cpu_total && total > n->cpu_total)
		w->cpu_usage = (double)(busy - n->cpu_busy) /
			       (total - n->cpu_total) * w->ncpus;
	n->cpu_busy = busy;
	n->cpu_total = total;
}

static int show_value(char *buf, size_t len, double v, int decimals)
{
	if (isnan(v))
		return -ENODATA;
	return snprintf(buf, len, "%.*f", decimals, v) >= (int)len ? -EOVERFLOW : 0;
}

static int show_cpu_usage(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd *d = k->owner;

	return show_value(buf, len, d->period.node.cpu_usage, 3);
}

static int show_cpus(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd *d = k->owner;

	return show_value(buf, len, d->period.node.ncpus, 0);
}

static int show_pods_memory(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd *d = k->owner;

	return show_value(buf, len, strstr(k->path, "limit") ? d->period.node.pods_mem_limit :
				    d->period.node.pods_mem_available, 0);
}

static int show_memory_pressure(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd *d = k->owner;

	return show_value(buf, len, d->period.node.memory_pressure_pct, 2);
}

static int show_psi(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd *d = k->owner;
	size_t i;

	for (i = 0; i < 3; i++)
		if (strstr(k->path, psi_res[i]) == k->path + strlen("node/pressure/"))
			return show_value(buf, len, d->period.node.psi_some_avg10[i], 2);
	return -ENODATA;
}

/* Each file, where this kernel (and the host's /proc, hostroot.h) has it. */
static void open_files(struct node *n)
{
	char path[PATH_MAX];
	size_t i;

	for (i = 0; i < NF_NR; i++) {
		n->fd[i] = -1;
		if (!moat_host_path(path, sizeof(path), node_path[i]))
			n->fd[i] = open(path, O_RDONLY | O_CLOEXEC);
	}
	/* where glibc reads it: sysfs is the host's, not a PID namespace's */
	n->online = open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC);
}

static int node_init(struct moatd *d)
{
	struct moat_knob k = { .type = MOAT_KNOB_SHOW, .owner = d };
	struct node *n = moatd_mod(d, MOD_NODE);
	size_t i;
	int err;

	d->period.node = (struct node_sample){
		.ncpus = NAN, .cpu_usage = NAN, .psi_some_avg10 = { NAN, NAN, NAN },
		.memory_pressure_pct = NAN,
		.mem_total = NAN, .mem_available = NAN, .swap_total = NAN,
		.pods_mem_limit = NAN, .pods_mem_available = NAN,
	};
	for (i = 0; i < PF_NR; i++)
		n->pods_fd[i] = -1;
	k.show = show_cpus;
	strcpy(k.path, "node/cpus");
	err = moat_knob_add(d->tree, &k);
	k.show = show_cpu_usage;
	strcpy(k.path, "node/cpu_usage");
	if (!err)
		err = moat_knob_add(d->tree, &k);
	k.show = show_psi;
	for (i = 0; i < 3 && !err; i++) {
		snprintf(k.path, sizeof(k.path), "node/pressure/%s_some_avg10",
			 psi_res[i]);
		err = moat_knob_add(d->tree, &k);
	}
	k.show = show_memory_pressure;
	strcpy(k.path, "node/memory_pressure_pct");
	if (!err)
		err = moat_knob_add(d->tree, &k);
	k.show = show_pods_memory;
	strcpy(k.path, "node/pods_memory_limit");
	if (!err)
		err = moat_knob_add(d->tree, &k);
	strcpy(k.path, "node/pods_memory_available");
	if (!err)
		err = moat_knob_add(d->tree, &k);
	open_files(n);
	if (n->fd[NF_PSI_CPU] < 0)
		pr_info("node: no /proc/pressure (kernel without PSI): node/pressure/* stay empty");
	return err;
}

static void node_close(struct moatd *d)
{
	struct node *n = moatd_mod(d, MOD_NODE);
	size_t i;

	for (i = 0; i < NF_NR; i++) {
		if (n->fd[i] >= 0)
			close(n->fd[i]);
		n->fd[i] = -1;
	}
	if (n->online >= 0)
		close(n->online);
	n->online = -1;
	pods_close(n);
}

const struct moatd_module node_module = {
	.name = "node",
	.size = sizeof(struct node),
	.init = node_init,
	.close = node_close,
};
