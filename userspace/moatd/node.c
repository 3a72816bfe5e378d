// SPDX-License-Identifier: GPL-2.0-only
/*
 * The node's own signals, a source: CPU utilization (/proc/stat), memory
 * (/proc/meminfo) and pressure (/proc/pressure/cpu, memory and io, per
 * accounting/psi.rst), read once a period into the period's record; and
 * its knobs under node/.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
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

struct node {
	__u64 cpu_busy, cpu_total;	/* /proc/stat jiffies at the last read */
	int fd[NF_NR];			/* -1: not open */
	int online;			/* /sys/devices/system/cpu/online */
};

static const char *const psi_res[] = { "cpu", "memory", "io" };

/*
 * The start of file @f, NUL-terminated, in @buf: what the lines read
 * here need (/proc/stat's first line; MemAvailable is meminfo's third).
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

/* The kB of "@key:" at a line's start in @buf, in bytes; NAN where missing. */
static double meminfo_bytes(const char *buf, const char *key)
{
	size_t klen = strlen(key);
	unsigned long long kb;
	const char *p;

	for (p = buf; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (!strncmp(p, key, klen) && p[klen] == ':')
			return sscanf(p + klen + 1, "%llu kB", &kb) == 1 ?
			       kb * 1024.0 : NAN;
	return NAN;
}

/* MemTotal and MemAvailable, in bytes; NAN where missing. */
static void read_meminfo(const struct node *n, double *total, double *avail)
{
	char buf[1024];

	*total = *avail = NAN;
	if (reread(n, NF_MEMINFO, buf, sizeof(buf)))
		return;
	*total = meminfo_bytes(buf, "MemTotal");
	*avail = meminfo_bytes(buf, "MemAvailable");
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

void node_sample(struct moatd *d, struct node_sample *w)
{
	struct node *n = moatd_mod(d, MOD_NODE);
	__u64 busy = 0, total = 0;
	size_t i;

	w->ncpus = online_cpus(n);
	for (i = 0; i < 3; i++)
		w->psi_some_avg10[i] = read_psi_some_avg10(n, i);
	read_meminfo(n, &w->mem_total, &w->mem_available);
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
		.mem_total = NAN, .mem_available = NAN,
	};
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
}

const struct moatd_module node_module = {
	.name = "node",
	.size = sizeof(struct node),
	.init = node_init,
	.close = node_close,
};
