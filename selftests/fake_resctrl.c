// SPDX-License-Identifier: GPL-2.0-only
/*
 * moat-fake-resctrl: a FAKE resctrl file system, for the tests of a
 * machine without Intel RDT or AMD PQoS.  It is a FUSE file system that
 * behaves as the kernel's resctrl does (Documentation/filesystems/
 * resctrl.rst, and fs/resctrl's rdtgroup.c and ctrlmondata.c for the
 * exact messages): info/ in the kernel's formats; mkdir of a control
 * group takes a CLOSID (and an RMID) or fails with ENOSPC and "Out of
 * CLOSIDs"; a new group starts with every way and all the bandwidth;
 * rmdir moves the group's tasks back to the default group (a monitoring
 * group's to its parent); a schemata write is parsed whole and applied
 * all or nothing, with the kernel's last_cmd_status on a refusal; a tid
 * written to tasks that does not exist is ESRCH with "No task N"; a tid
 * written to a monitoring group must already be in its parent; the
 * default group lists every task on the machine that no other control
 * group has.  mon_data counts bytes at a fixed rate per group.
 *
 *   moat-fake-resctrl [--layout intel|intel-cdp|amd] [--closids N]
 *                     [--rmids N] [--exclusive MASK] [--mbm-rate B/s]
 *                     [--occupancy BYTES] MOUNTPOINT
 *
 * --exclusive MASK: a control group "other" (not moat's) in exclusive
 * mode holds MASK of every L3 domain, and the default group the rest,
 * as an admin would set it up: writes that overlap it are refused with
 * "Overlaps with exclusive group".
 *
 * It runs in the foreground, single-threaded, until SIGTERM, and then
 * unmounts.  Not a kernel: no CPUs file semantics, no pseudo-locking.
 */
#define FUSE_USE_VERSION 31
#include <errno.h>
#include <fuse.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/stat.h>

#define NRES	4
#define NDOM	24
#define NGRP	256
#define NTASK	65536

struct res {
	const char *name;
	bool cache;
	uint64_t cbm_mask, shareable;
	unsigned int min_cbm_bits, closids;
	unsigned int gran, min_bw, max_bw, delay_linear;
};

struct grp {
	char name[256];
	bool used, exclusive;
	int parent;			/* -1: a control group */
	uint64_t val[NRES][NDOM];
	struct timespec born;
};

static struct res res[NRES];
static unsigned int nres;
static unsigned int dom[NDOM], ndom;
static bool amd;
static unsigned int num_rmids = 224;
static unsigned long long mbm_rate = 100 << 20, occupancy = 1 << 20;
static struct grp grp[NGRP];
static struct { int tid, g; } task[NTASK];
static size_t ntask;
static char status[512] = "";

static void cmd_clear(void)
{
	status[0] = '\0';
}

static __attribute__((format(printf, 1, 2)))
void cmd_printf(const char *fmt, ...)
{
	size_t n = strlen(status);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(status + n, sizeof(status) - n, fmt, ap);
	va_end(ap);
}

/* ---- the layouts ---- */

static void layout(const char *name, unsigned int closids)
{
	unsigned int i, l3_closids = closids, mb_closids = closids;

	if (!strcmp(name, "amd")) {
		amd = true;
		for (i = 0; i < 24; i++)	/* ids 0-7, then 16-23 */
			if (i < 8 || i >= 16)
				dom[ndom++] = i;
		res[nres++] = (struct res){
			.name = "L3", .cache = true, .cbm_mask = 0xffff,
			.shareable = 0, .min_cbm_bits = 1,
			.closids = l3_closids };
		res[nres++] = (struct res){ .name = "MB", .closids = mb_closids,
					    .gran = 1, .min_bw = 0, .max_bw = 2048 };
		return;
	}
	dom[ndom++] = 0;
	dom[ndom++] = 1;
	if (!strcmp(name, "intel-cdp")) {
		l3_closids = closids / 2;
		res[nres++] = (struct res){
			.name = "L3CODE", .cache = true, .cbm_mask = 0x7ff,
			.shareable = 0x600, .min_cbm_bits = 1,
			.closids = l3_closids };
		res[nres++] = (struct res){
			.name = "L3DATA", .cache = true, .cbm_mask = 0x7ff,
			.shareable = 0x600, .min_cbm_bits = 1,
			.closids = l3_closids };
	} else {
		res[nres++] = (struct res){
			.name = "L3", .cache = true, .cbm_mask = 0x7ff,
			.shareable = 0x600, .min_cbm_bits = 1,
			.closids = l3_closids };
	}
	res[nres++] = (struct res){ .name = "MB", .closids = mb_closids > 8 ? 8 : mb_closids,
				    .gran = 10, .min_bw = 10, .max_bw = 100,
				    .delay_linear = 1 };
}

static unsigned int closids(void)
{
	unsigned int i, n = ~0u;

	for (i = 0; i < nres; i++)
		if (res[i].closids < n)
			n = res[i].closids;
	return n;
}

static int group_new(const char *name, int parent)
{
	unsigned int r, d;
	int g;

	for (g = 1; g < NGRP && grp[g].used; g++)
		;
	if (g == NGRP)
		return -1;
	grp[g] = (struct grp){ .used = true, .parent = parent };
	snprintf(grp[g].name, sizeof(grp[g].name), "%s", name);
	clock_gettime(CLOCK_MONOTONIC, &grp[g].born);
	/* as the kernel: every way no exclusive group holds, all the bandwidth */
	for (r = 0; r < nres; r++)
		for (d = 0; d < ndom; d++) {
			uint64_t v = res[r].cache ? res[r].cbm_mask : res[r].max_bw;
			int o;

			for (o = 0; res[r].cache && o < NGRP; o++)
				if (o != g && grp[o].used && grp[o].exclusive)
					v &= ~grp[o].val[r][d];
			grp[g].val[r][d] = v;
		}
	return g;
}

/* ---- tasks ---- */

static bool tid_alive(int tid)
{
	char p[64];
	struct stat st;

	snprintf(p, sizeof(p), "/proc/%d", tid);
	return !stat(p, &st);
}

static int task_group(int tid)
{
	size_t i;

	for (i = 0; i < ntask; i++)
		if (task[i].tid == tid)
			return task[i].g;
	return 0;
}

static void task_set(int tid, int g)
{
	size_t i;

	for (i = 0; i < ntask; i++)
		if (task[i].tid == tid)
			break;
	if (g == 0) {
		if (i < ntask)
			task[i] = task[--ntask];
		return;
	}
	if (i == ntask) {
		if (ntask == NTASK)
			return;
		ntask++;
	}
	task[i].tid = tid;
	task[i].g = g;
}

static int ctrl_of(int g)
{
	return grp[g].parent >= 0 ? grp[g].parent : g;
}

/* Every live task in /proc that no other control group has. */
static void list_default(char *buf, size_t len)
{
	DIR *p = opendir("/proc"), *t;
	struct dirent *pe, *te;
	size_t n = 0;

	buf[0] = '\0';
	while (p && (pe = readdir(p))) {
		char path[300];

		if (pe->d_name[0] < '0' || pe->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/task", pe->d_name);
		t = opendir(path);
		while (t && (te = readdir(t))) {
			int tid = atoi(te->d_name), tg;

			if (tid <= 0)
				continue;
			tg = task_group(tid);
			if (ctrl_of(tg) == 0)
				n += snprintf(buf + n, n < len ? len - n : 0, "%d\n", tid);
		}
		if (t)
			closedir(t);
	}
	if (p)
		closedir(p);
	if (n >= len)
		buf[len - 1] = '\0';
}

static void list_tasks(char *buf, size_t len, int g)
{
	size_t i, n = 0;

	if (g == 0)
		return list_default(buf, len);
	buf[0] = '\0';
	for (i = 0; i < ntask; i++) {
		if (!tid_alive(task[i].tid))
			continue;
		if (task[i].g == g || (grp[g].parent < 0 && grp[task[i].g].parent == g))
			n += snprintf(buf + n, n < len ? len - n : 0, "%d\n",
				      task[i].tid);
	}
	if (n >= len)
		buf[len - 1] = '\0';
}

static int tasks_write(int g, char *buf)
{
	char *tok;

	while (buf && *buf && *buf != '\n') {
		char *end;
		long pid;

		tok = strsep(&buf, ",");
		pid = strtol(tok, &end, 0);
		while (*end == ' ' || *end == '\n')
			end++;
		if (end == tok || *end) {
			cmd_printf("Task list parsing error pid %s\n", tok);
			return -EINVAL;
		}
		if (pid < 0) {
			cmd_printf("Invalid pid %ld\n", pid);
			return -EINVAL;
		}
		if (!tid_alive(pid)) {
			cmd_printf("No task %ld\n", pid);
			cmd_printf("Error while processing task %ld\n", pid);
			return -ESRCH;
		}
		if (grp[g].parent >= 0 && ctrl_of(task_group(pid)) != grp[g].parent) {
			cmd_printf("Can't move task to different control group\n");
			cmd_printf("Error while processing task %ld\n", pid);
			return -EINVAL;
		}
		task_set(pid, g);
	}
	return 0;
}

/* ---- schemata ---- */

static void show_schemata(char *buf, size_t len, int g)
{
	size_t n = 0, w = 0;
	unsigned int r, d;

	for (r = 0; r < nres; r++)
		if (strlen(res[r].name) > w)
			w = strlen(res[r].name);
	buf[0] = '\0';
	for (r = 0; r < nres; r++) {
		n += snprintf(buf + n, len - n, "%*s:", (int)w, res[r].name);
		for (d = 0; d < ndom; d++) {
			if (res[r].cache)	/* the format since v6.15 */
				n += snprintf(buf + n, len - n, "%s%u=%llx", d ? ";" : "",
					      dom[d], (unsigned long long)grp[g].val[r][d]);
			else
				n += snprintf(buf + n, len - n, "%s%u=%llu", d ? ";" : "",
					      dom[d], (unsigned long long)grp[g].val[r][d]);
		}
		n += snprintf(buf + n, len - n, "\n");
	}
}

static bool cbm_valid(const struct res *r, const char *s, uint64_t *out)
{
	unsigned long long v;
	unsigned int first, zero;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 16);
	if (errno || end == s || *end) {
		cmd_printf("Non-hex character in the mask %s\n", s);
		return false;
	}
	if ((r->min_cbm_bits > 0 && v == 0) || v > r->cbm_mask) {
		cmd_printf("Mask out of range\n");
		return false;
	}
	first = v ? __builtin_ctzll(v) : 0;
	for (zero = first; zero < 64 && (v >> zero & 1); zero++)
		;
	if (!amd && zero < 64 && (v >> zero)) {
		cmd_printf("The mask %llx has non-consecutive 1-bits\n", v);
		return false;
	}
	if (zero - first < r->min_cbm_bits) {
		cmd_printf("Need at least %u bits in the mask\n", r->min_cbm_bits);
		return false;
	}
	*out = v;
	return true;
}

static bool bw_valid(const struct res *r, const char *s, uint64_t *out)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end) {
		cmd_printf("Non-decimal digit in MB value %s\n", s);
		return false;
	}
	if (v < r->min_bw || v > r->max_bw) {
		cmd_printf("MB value %lu out of range [%u,%u]\n", v, r->min_bw,
			   r->max_bw);
		return false;
	}
	if (r->gran > 1)
		v = (v + r->gran - 1) / r->gran * r->gran;
	*out = v;
	return true;
}

static int parse_line(int g, unsigned int r, char *line,
		      uint64_t staged[NRES][NDOM], bool have[NRES][NDOM])
{
	while (line && *line) {
		char *d = strsep(&line, ";"), *id = strsep(&d, "="), *end;
		unsigned long dom_id = strtoul(id, &end, 10);
		unsigned int i;
		uint64_t v;
		int o;

		while (d && *d == ' ')
			d++;
		if (!d || end == id || *end) {
			cmd_printf("Missing '=' or non-numeric domain\n");
			return -EINVAL;
		}
		for (i = 0; i < ndom && dom[i] != dom_id; i++)
			;
		if (i == ndom)
			return -EINVAL;		/* the kernel says nothing here */
		if (have[r][i]) {
			cmd_printf("Duplicate domain %lu\n", dom_id);
			return -EINVAL;
		}
		if (res[r].cache ? !cbm_valid(&res[r], d, &v) : !bw_valid(&res[r], d, &v))
			return -EINVAL;
		for (o = 0; res[r].cache && o < NGRP; o++)
			if (grp[o].used && o != g && grp[o].parent < 0 &&
			    (grp[o].exclusive || grp[g].exclusive) &&
			    (grp[o].val[r][i] & v)) {
				cmd_printf("Overlaps with exclusive group\n");
				return -EINVAL;
			}
		staged[r][i] = v;
		have[r][i] = true;
	}
	return 0;
}

static int schemata_write(int g, char *buf, size_t n)
{
	static uint64_t staged[NRES][NDOM];
	static bool have[NRES][NDOM];
	unsigned int r, d;
	char *tok;

	if (n == 0 || buf[n - 1] != '\n')
		return -EINVAL;
	buf[n - 1] = '\0';
	memset(have, 0, sizeof(have));
	while ((tok = strsep(&buf, "\n"))) {
		char *name = strsep(&tok, ":");
		int err;

		while (*name == ' ')
			name++;
		if (!tok) {
			cmd_printf("Missing ':'\n");
			return -EINVAL;
		}
		if (!*tok) {
			cmd_printf("Missing '%s' value\n", name);
			return -EINVAL;
		}
		for (r = 0; r < nres && strcmp(res[r].name, name); r++)
			;
		if (r == nres) {
			cmd_printf("Unknown or unsupported resource name '%s'\n", name);
			return -EINVAL;
		}
		err = parse_line(g, r, tok, staged, have);
		if (err)
			return err;
	}
	for (r = 0; r < nres; r++)
		for (d = 0; d < ndom; d++)
			if (have[r][d])
				grp[g].val[r][d] = staged[r][d];
	return 0;
}

/* ---- paths ---- */

enum node {
	N_NONE, N_DIR, N_FILE,
};

enum what {
	W_ROOTDIR, W_INFO, W_INFO_RES, W_INFO_MON, W_GROUP, W_MONGROUPS,
	W_MONDATA, W_MONDOM, W_STATUS, W_RESFILE, W_MONFILE, W_TASKS,
	W_SCHEMATA, W_CPUS, W_CPUS_LIST, W_MODE, W_SIZE, W_EVENT,
};

struct loc {
	enum what w;
	int g;			/* the group */
	int r;			/* info/<res>: index, -1: L3_MON */
	int d;			/* mon_L3_XX: the domain */
	char file[64];
};

static int group_find(const char *name, int parent)
{
	int g;

	for (g = 1; g < NGRP; g++)
		if (grp[g].used && grp[g].parent == parent &&
		    !strcmp(grp[g].name, name))
			return g;
	return -1;
}

static const char *const res_files[] = {
	"cbm_mask", "min_cbm_bits", "num_closids", "shareable_bits",
	"bit_usage", "sparse_masks", NULL,
};
static const char *const mb_files[] = {
	"bandwidth_gran", "delay_linear", "min_bandwidth", "num_closids",
	"thread_throttle_mode", NULL,
};
static const char *const mon_files[] = {
	"max_threshold_occupancy", "mon_features", "num_rmids", NULL,
};
static const char *const events[] = {
	"llc_occupancy", "mbm_local_bytes", "mbm_total_bytes", NULL,
};

static bool in_list(const char *const *l, const char *s)
{
	for (; *l; l++)
		if (!strcmp(*l, s))
			return true;
	return false;
}

/* Resolve the part of @p below group @g's directory. */
static int group_part(struct loc *l, int g, char *p)
{
	char *c = strsep(&p, "/");
	static const struct { const char *name; enum what w; } files[] = {
		{ "tasks", W_TASKS }, { "schemata", W_SCHEMATA },
		{ "cpus", W_CPUS }, { "cpus_list", W_CPUS_LIST },
		{ "mode", W_MODE }, { "size", W_SIZE },
	};
	unsigned int i;

	l->g = g;
	if (!c || !*c) {
		l->w = W_GROUP;
		return N_DIR;
	}
	if (!strcmp(c, "mon_data")) {
		unsigned int id;
		char *e;

		c = strsep(&p, "/");
		if (!c) {
			l->w = W_MONDATA;
			return N_DIR;
		}
		if (strncmp(c, "mon_L3_", 7))
			return N_NONE;
		id = strtoul(c + 7, &e, 10);
		if (*e)
			return N_NONE;
		for (i = 0; i < ndom && dom[i] != id; i++)
			;
		if (i == ndom)
			return N_NONE;
		l->d = i;
		c = strsep(&p, "/");
		if (!c) {
			l->w = W_MONDOM;
			return N_DIR;
		}
		if (p || !in_list(events, c))
			return N_NONE;
		l->w = W_EVENT;
		snprintf(l->file, sizeof(l->file), "%s", c);
		return N_FILE;
	}
	if (!strcmp(c, "mon_groups") && grp[g].parent < 0) {
		c = strsep(&p, "/");
		if (!c) {
			l->w = W_MONGROUPS;
			return N_DIR;
		}
		g = group_find(c, g);
		return g < 0 ? N_NONE : group_part(l, g, p);
	}
	if (p)
		return N_NONE;
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (!strcmp(c, files[i].name)) {
			if (grp[g].parent >= 0 && (files[i].w == W_SCHEMATA ||
						   files[i].w == W_MODE ||
						   files[i].w == W_SIZE))
				return N_NONE;
			l->w = files[i].w;
			return N_FILE;
		}
	return N_NONE;
}

static int resolve(const char *path, struct loc *l)
{
	char buf[1024], *p = buf, *c;
	unsigned int r;
	int g;

	memset(l, 0, sizeof(*l));
	snprintf(buf, sizeof(buf), "%s", path + 1);
	if (!*p) {
		l->w = W_ROOTDIR;
		return N_DIR;
	}
	c = strsep(&p, "/");
	if (!strcmp(c, "info")) {
		c = strsep(&p, "/");
		if (!c) {
			l->w = W_INFO;
			return N_DIR;
		}
		if (!strcmp(c, "last_cmd_status") && !p) {
			l->w = W_STATUS;
			return N_FILE;
		}
		if (!strcmp(c, "L3_MON")) {
			l->r = -1;
			c = strsep(&p, "/");
			if (!c) {
				l->w = W_INFO_MON;
				return N_DIR;
			}
			if (p || !in_list(mon_files, c))
				return N_NONE;
			l->w = W_MONFILE;
			snprintf(l->file, sizeof(l->file), "%s", c);
			return N_FILE;
		}
		for (r = 0; r < nres && strcmp(res[r].name, c); r++)
			;
		if (r == nres)
			return N_NONE;
		l->r = r;
		c = strsep(&p, "/");
		if (!c) {
			l->w = W_INFO_RES;
			return N_DIR;
		}
		if (p || !in_list(res[r].cache ? res_files : mb_files, c) ||
		    (!strcmp(c, "sparse_masks") && !res[r].cache))
			return N_NONE;
		l->w = W_RESFILE;
		snprintf(l->file, sizeof(l->file), "%s", c);
		return N_FILE;
	}
	g = group_find(c, -1);
	if (g >= 0)
		return group_part(l, g, p);
	/* the default group's own files and directories */
	snprintf(buf, sizeof(buf), "%s", path + 1);
	return group_part(l, 0, buf);
}

/* ---- file contents ---- */

static unsigned long long group_event(int g, unsigned int d, const char *ev)
{
	unsigned long long v;
	struct timespec now;
	double s;
	int m;

	if (!strcmp(ev, "llc_occupancy"))
		v = occupancy / ndom;
	else {
		clock_gettime(CLOCK_MONOTONIC, &now);
		s = now.tv_sec - grp[g].born.tv_sec +
		    (now.tv_nsec - grp[g].born.tv_nsec) / 1e9;
		v = (unsigned long long)(s * mbm_rate / ndom) /
		    (strcmp(ev, "mbm_local_bytes") ? 1 : 2);
	}
	if (grp[g].parent < 0)	/* a control group: its RMID and its MON groups' */
		for (m = 1; m < NGRP; m++)
			if (grp[m].used && grp[m].parent == g)
				v += group_event(m, d, ev);
	return v;
}

static void content(const struct loc *l, char *buf, size_t len)
{
	const struct res *r = l->r >= 0 ? &res[l->r] : NULL;

	buf[0] = '\0';
	switch (l->w) {
	case W_STATUS:
		snprintf(buf, len, "%s", status[0] ? status : "ok\n");
		break;
	case W_RESFILE:
		if (!strcmp(l->file, "cbm_mask"))
			snprintf(buf, len, "%llx\n", (unsigned long long)r->cbm_mask);
		else if (!strcmp(l->file, "min_cbm_bits"))
			snprintf(buf, len, "%u\n", r->min_cbm_bits);
		else if (!strcmp(l->file, "num_closids"))
			snprintf(buf, len, "%u\n", r->closids);
		else if (!strcmp(l->file, "shareable_bits"))
			snprintf(buf, len, "%llx\n", (unsigned long long)r->shareable);
		else if (!strcmp(l->file, "sparse_masks"))
			snprintf(buf, len, "%d\n", amd);
		else if (!strcmp(l->file, "bandwidth_gran"))
			snprintf(buf, len, "%u\n", r->gran);
		else if (!strcmp(l->file, "min_bandwidth"))
			snprintf(buf, len, "%u\n", r->min_bw);
		else if (!strcmp(l->file, "delay_linear"))
			snprintf(buf, len, "%u\n", r->delay_linear);
		else if (!strcmp(l->file, "thread_throttle_mode"))
			snprintf(buf, len, "max\n");
		else if (!strcmp(l->file, "bit_usage"))
			snprintf(buf, len, "0=SSSSSSSSSSS\n");
		break;
	case W_MONFILE:
		if (!strcmp(l->file, "num_rmids"))
			snprintf(buf, len, "%u\n", num_rmids);
		else if (!strcmp(l->file, "mon_features"))
			snprintf(buf, len, "llc_occupancy\nmbm_total_bytes\nmbm_local_bytes\n");
		else
			snprintf(buf, len, "%llu\n", occupancy / 4);
		break;
	case W_TASKS:
		list_tasks(buf, len, l->g);
		break;
	case W_SCHEMATA:
		show_schemata(buf, len, l->g);
		break;
	case W_CPUS:
		snprintf(buf, len, l->g ? "0\n" : "ffffffff\n");
		break;
	case W_CPUS_LIST:
		snprintf(buf, len, l->g ? "\n" : "0-31\n");
		break;
	case W_MODE:
		snprintf(buf, len, grp[l->g].exclusive ? "exclusive\n" : "shareable\n");
		break;
	case W_SIZE:
		snprintf(buf, len, "%s:0=0\n", res[0].name);
		break;
	case W_EVENT:
		snprintf(buf, len, "%llu\n", group_event(l->g, l->d, l->file));
		break;
	default:
		break;
	}
}

/* ---- FUSE operations ---- */

static int fk_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	struct loc l;
	int n = resolve(path, &l);

	memset(st, 0, sizeof(*st));
	if (n == N_NONE)
		return -ENOENT;
	if (n == N_DIR) {
		st->st_mode = S_IFDIR | (l.w == W_GROUP || l.w == W_ROOTDIR ||
					 l.w == W_MONGROUPS ? 0755 : 0555);
		st->st_nlink = 2;
	} else {
		bool rw = l.w == W_TASKS || l.w == W_SCHEMATA || l.w == W_CPUS ||
			  l.w == W_CPUS_LIST || l.w == W_MODE;

		st->st_mode = S_IFREG | (rw ? 0644 : 0444);
		st->st_nlink = 1;
		st->st_size = 0;	/* like every kernfs file */
	}
	return 0;
}

static int fk_readdir(const char *path, void *buf, fuse_fill_dir_t fill,
		      off_t off, struct fuse_file_info *fi,
		      enum fuse_readdir_flags flags)
{
	static const char *const gfiles[] = { "cpus", "cpus_list", "mode",
		"schemata", "size", "tasks", "mon_data", "mon_groups", NULL };
	static const char *const mfiles[] = { "cpus", "cpus_list", "tasks",
		"mon_data", NULL };
	const char *const *names = NULL;
	struct stat dir = { .st_mode = S_IFDIR }, file = { .st_mode = S_IFREG };
	struct loc l;
	char name[32];
	unsigned int i;
	int g;

	if (resolve(path, &l) != N_DIR)
		return -ENOTDIR;
	fill(buf, ".", &dir, 0, 0);
	fill(buf, "..", &dir, 0, 0);
	switch (l.w) {
	case W_ROOTDIR:
		fill(buf, "info", &dir, 0, 0);
		for (g = 1; g < NGRP; g++)
			if (grp[g].used && grp[g].parent < 0)
				fill(buf, grp[g].name, &dir, 0, 0);
		names = gfiles;
		break;
	case W_GROUP:
		names = grp[l.g].parent < 0 ? gfiles : mfiles;
		break;
	case W_INFO:
		fill(buf, "last_cmd_status", &file, 0, 0);
		fill(buf, "L3_MON", &dir, 0, 0);
		for (i = 0; i < nres; i++)
			fill(buf, res[i].name, &dir, 0, 0);
		break;
	case W_INFO_RES:
		names = res[l.r].cache ? res_files : mb_files;
		break;
	case W_INFO_MON:
		names = mon_files;
		break;
	case W_MONGROUPS:
		for (g = 1; g < NGRP; g++)
			if (grp[g].used && grp[g].parent == l.g)
				fill(buf, grp[g].name, &dir, 0, 0);
		break;
	case W_MONDATA:
		for (i = 0; i < ndom; i++) {
			snprintf(name, sizeof(name), "mon_L3_%02u", dom[i]);
			fill(buf, name, &dir, 0, 0);
		}
		break;
	case W_MONDOM:
		names = events;
		break;
	default:
		break;
	}
	for (; names && *names; names++)
		if (strcmp(*names, "sparse_masks") || (l.w == W_INFO_RES && res[l.r].cache))
			fill(buf, *names, strncmp(*names, "mon_", 4) ? &file : &dir,
			     0, 0);
	return 0;
}

static int fk_open(const char *path, struct fuse_file_info *fi)
{
	struct loc l;

	if (resolve(path, &l) != N_FILE)
		return -ENOENT;
	fi->direct_io = 1;	/* no size: read until the content ends */
	return 0;
}

static int fk_read(const char *path, char *buf, size_t size, off_t off,
		   struct fuse_file_info *fi)
{
	static char text[1 << 20];
	struct loc l;
	size_t n;

	if (resolve(path, &l) != N_FILE)
		return -ENOENT;
	content(&l, text, sizeof(text));
	n = strlen(text);
	if ((size_t)off >= n)
		return 0;
	if (size > n - off)
		size = n - off;
	memcpy(buf, text + off, size);
	return size;
}

static int fk_write(const char *path, const char *data, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	static char buf[65536];
	struct loc l;
	int err = -EACCES;

	if (resolve(path, &l) != N_FILE)
		return -ENOENT;
	if (size >= sizeof(buf))
		return -E2BIG;
	memcpy(buf, data, size);
	buf[size] = '\0';
	cmd_clear();
	switch (l.w) {
	case W_TASKS:
		err = tasks_write(l.g, buf);
		break;
	case W_SCHEMATA:
		err = schemata_write(l.g, buf, size);
		break;
	case W_CPUS:
	case W_CPUS_LIST:
	case W_MODE:
		err = 0;	/* accepted and ignored: not modelled */
		break;
	default:
		break;
	}
	return err ? err : (int)size;
}

static int fk_truncate(const char *path, off_t size, struct fuse_file_info *fi)
{
	return 0;		/* O_TRUNC from a shell's ">" */
}

static int fk_mkdir(const char *path, mode_t mode)
{
	struct loc l;
	char parent[1024], *slash, *name;
	unsigned int ngroups = 0, nrmids = 0;
	int g, p;

	snprintf(parent, sizeof(parent), "%s", path);
	slash = strrchr(parent, '/');
	name = slash + 1;
	*slash = '\0';
	if (resolve(*parent ? parent : "/", &l) != N_DIR)
		return -ENOENT;
	if (l.w != W_ROOTDIR && l.w != W_MONGROUPS)
		return -EPERM;
	if (strchr(name, '\n'))
		return -EINVAL;
	if (resolve(path, &l) != N_NONE)
		return -EEXIST;
	resolve(*parent ? parent : "/", &l);
	cmd_clear();
	for (g = 0; g < NGRP; g++) {
		ngroups += grp[g].used && grp[g].parent < 0;
		nrmids += grp[g].used;
	}
	if (l.w == W_ROOTDIR) {
		if (ngroups >= closids()) {
			cmd_printf("Out of CLOSIDs\n");
			return -ENOSPC;
		}
		p = -1;
	} else {
		p = l.g;
	}
	if (nrmids >= num_rmids) {
		cmd_printf("Out of RMIDs\n");
		return -ENOSPC;
	}
	g = group_new(name, p);
	if (g < 0)
		return -ENOSPC;
	if (p >= 0)
		memcpy(grp[g].val, grp[p].val, sizeof(grp[g].val));
	return 0;
}

static int fk_rmdir(const char *path)
{
	struct loc l;
	size_t i;
	int g, m;

	if (resolve(path, &l) != N_DIR || l.w != W_GROUP || l.g == 0)
		return -EPERM;
	g = l.g;
	for (m = 1; m < NGRP; m++)	/* its MON groups go with it */
		if (grp[m].used && grp[m].parent == g)
			grp[m].used = false;
	for (i = 0; i < ntask;) {
		int tg = task[i].g;

		if (tg == g || (tg > 0 && !grp[tg].used)) {
			/* a MON group's tasks stay in its parent */
			if (grp[g].parent >= 0 && tg == g) {
				task[i].g = grp[g].parent;
				i++;
			} else {
				task[i] = task[--ntask];
			}
		} else {
			i++;
		}
	}
	grp[g].used = false;
	return 0;
}

static const struct fuse_operations ops = {
	.getattr = fk_getattr,
	.readdir = fk_readdir,
	.open = fk_open,
	.read = fk_read,
	.write = fk_write,
	.truncate = fk_truncate,
	.mkdir = fk_mkdir,
	.rmdir = fk_rmdir,
};

static void usage(void)
{
	fprintf(stderr, "usage: moat-fake-resctrl [--layout intel|intel-cdp|amd] [--closids N] [--rmids N] [--exclusive MASK] [--mbm-rate B/s] [--occupancy BYTES] MOUNTPOINT\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *lay = "intel", *mnt = NULL;
	unsigned long long excl = 0;
	unsigned int ncl = 16, r, d;
	char *fargv[8];
	int i, fargc = 0;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (a[0] != '-') {
			mnt = a;
			continue;
		}
		if (i + 1 >= argc)
			usage();
		if (!strcmp(a, "--layout"))
			lay = argv[++i];
		else if (!strcmp(a, "--closids"))
			ncl = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(a, "--rmids"))
			num_rmids = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(a, "--exclusive"))
			excl = strtoull(argv[++i], NULL, 16);
		else if (!strcmp(a, "--mbm-rate"))
			mbm_rate = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(a, "--occupancy"))
			occupancy = strtoull(argv[++i], NULL, 0);
		else
			usage();
	}
	if (!mnt || (strcmp(lay, "intel") && strcmp(lay, "intel-cdp") &&
		     strcmp(lay, "amd")))
		usage();
	layout(lay, ncl);
	grp[0].used = true;
	grp[0].parent = -1;
	clock_gettime(CLOCK_MONOTONIC, &grp[0].born);
	for (r = 0; r < nres; r++)
		for (d = 0; d < ndom; d++)
			grp[0].val[r][d] = res[r].cache ? res[r].cbm_mask & ~excl :
							   res[r].max_bw;
	if (excl) {
		int g = group_new("other", -1);

		grp[g].exclusive = true;
		for (r = 0; r < nres; r++)
			for (d = 0; d < ndom && res[r].cache; d++)
				grp[g].val[r][d] = excl;
	}
	fargv[fargc++] = argv[0];
	fargv[fargc++] = "-f";
	fargv[fargc++] = "-s";
	fargv[fargc++] = "-o";
	fargv[fargc++] = "fsname=resctrl,subtype=moat-fake";
	fargv[fargc++] = (char *)mnt;
	fargv[fargc] = NULL;
	return fuse_main(fargc, fargv, &ops, NULL);
}
