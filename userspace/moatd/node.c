// SPDX-License-Identifier: GPL-2.0-only
/*
 * The node's own signals, a source: CPU utilization (/proc/stat), memory
 * (/proc/meminfo) and pressure (/proc/pressure/cpu, memory and io, per
 * accounting/psi.rst), read once a period into the period's record; and
 * its knobs under node/.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "hostroot.h"
#include "log.h"
#include "node.h"

struct node {
	__u64 cpu_busy, cpu_total;	/* /proc/stat jiffies at the last read */
};

static const char *const psi_res[] = { "cpu", "memory", "io" };

/* "some avg10=1.23 ..." from /proc/pressure/<res>, per psi.rst. */
static double read_psi_some_avg10(const char *res)
{
	char path[64];
	double v;
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/proc/pressure/%s", res);
	f = moat_host_fopen(path);
	if (!f)
		return NAN;
	n = fscanf(f, "some avg10=%lf", &v);
	fclose(f);
	return n == 1 ? v : NAN;
}

/* Busy and total jiffies of all CPUs, from /proc/stat's "cpu" line. */
static int read_cpu_jiffies(__u64 *busy, __u64 *total)
{
	unsigned long long v[10] = {};
	FILE *f = moat_host_fopen("/proc/stat");
	int i, n;

	if (!f)
		return -errno;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu",
		   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7],
		   &v[8], &v[9]);
	fclose(f);
	if (n < 4)
		return -ENODATA;
	/* guest and guest_nice (8, 9) are already in user and nice. */
	*total = 0;
	for (i = 0; i < 8; i++)
		*total += v[i];
	*busy = *total - v[3] - v[4];	/* less idle and iowait */
	return 0;
}

/* MemTotal and MemAvailable, in bytes; NAN where missing. */
static void read_meminfo(double *total, double *avail)
{
	FILE *f = moat_host_fopen("/proc/meminfo");
	unsigned long long kb;
	char line[128];

	*total = *avail = NAN;
	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "MemTotal: %llu kB", &kb) == 1)
			*total = kb * 1024.0;
		else if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
			*avail = kb * 1024.0;
	}
	if (f)
		fclose(f);
}

void node_sample(struct moatd *d, struct node_sample *w)
{
	struct node *n = moatd_mod(d, MOD_NODE);
	__u64 busy = 0, total = 0;
	size_t i;

	w->ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	for (i = 0; i < 3; i++)
		w->psi_some_avg10[i] = read_psi_some_avg10(psi_res[i]);
	read_meminfo(&w->mem_total, &w->mem_available);
	w->cpu_usage = NAN;
	if (read_cpu_jiffies(&busy, &total))
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
	return show_value(buf, len, sysconf(_SC_NPROCESSORS_ONLN), 0);
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

static int node_init(struct moatd *d)
{
	struct moat_knob k = { .type = MOAT_KNOB_SHOW, .owner = d };
	size_t i;
	FILE *f;
	int err;

	d->period.node = (struct node_sample){
		.cpu_usage = NAN, .psi_some_avg10 = { NAN, NAN, NAN },
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
	f = moat_host_fopen("/proc/pressure/cpu");
	if (f)
		fclose(f);
	else
		pr_info("node: no /proc/pressure (kernel without PSI): node/pressure/* stay empty");
	return err;
}

const struct moatd_module node_module = {
	.name = "node",
	.size = sizeof(struct node),
	.init = node_init,
};
