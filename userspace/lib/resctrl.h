/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_RESCTRL_H
#define MOAT_RESCTRL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>
#include <linux/types.h>
#include "journal.h"

/*
 * resctrl, the kernel's interface to Intel RDT and AMD PQoS (the kernel's
 * Documentation/filesystems/resctrl.rst, formerly arch/x86/resctrl.rst):
 * what the hardware allows (info/), the schemata of a control group, and
 * the values moat may write, checked against the hardware's rules before
 * anything is written.  No policy here; its two writers, moat_rdt_write()
 * and moat_rdt_add_tasks(), write through the journal's moat_kfile_put(),
 * into the groups moat made (journal.h).
 *
 * Formats, as the kernel prints them:
 *  - info/<res>/cbm_mask, shareable_bits: hex; min_cbm_bits, num_closids,
 *    bandwidth_gran, min_bandwidth, delay_linear, sparse_masks (v6.8+):
 *    decimal; info/L3_MON/mon_features: one name a line.
 *  - schemata: one line per schema, "<name>:<id>=<value>;<id>=<value>..",
 *    the names right-aligned to the longest (so "    MB:" next to
 *    "L3CODE:"), and before v6.15 the values padded too (cache masks with
 *    zeros, bandwidth with spaces: "MB:0= 100").  Cache ids are whatever
 *    the hardware numbers them, not 0..n-1 (AMD: 0-7, then 16-23).
 *    Cache masks are hex, bandwidth decimal.
 */

#define MOAT_RDT_MAX_RES	8
#define MOAT_RDT_MAX_DOMAINS	64

enum moat_rdt_kind {
	MOAT_RDT_CACHE,		/* L3, L3CODE, L3DATA, L2...: bit masks */
	MOAT_RDT_MB,		/* MB: bandwidth */
};

/* How a bandwidth value is expressed: the one place vendors differ. */
enum moat_rdt_mb_unit {
	MOAT_RDT_MB_PERCENT,	/* Intel: % of the maximum, in steps of
				   bandwidth_gran, at least min_bandwidth */
	MOAT_RDT_MB_ABSOLUTE,	/* AMD: units of 1/8 GB/s, up to max_bw */
	MOAT_RDT_MB_MBPS,	/* mounted with mba_MBps: MB/s */
};

/* One schema: a line of the schemata file. */
struct moat_rdt_res {
	char name[16];
	enum moat_rdt_kind kind;
	unsigned int num_closids;
	/* cache */
	__u64 cbm_mask, shareable_bits;
	unsigned int min_cbm_bits;
	bool sparse;		/* sparse_masks: non-contiguous masks allowed */
	/* bandwidth */
	enum moat_rdt_mb_unit unit;
	unsigned int gran, min_bw, max_bw;
	bool delay_linear;
};

struct moat_rdt_info {
	struct moat_rdt_res res[MOAT_RDT_MAX_RES];
	size_t nres;
	unsigned int num_closids;	/* the least of the schemata's */
	bool cdp;			/* L3CODE and L3DATA */
	unsigned int num_rmids;		/* 0: no monitoring */
	bool llc_occupancy, mbm_total, mbm_local;
};

/* A schemata file's content. */
struct moat_rdt_line {
	char name[16];
	size_t n;
	unsigned int id[MOAT_RDT_MAX_DOMAINS];
	__u64 val[MOAT_RDT_MAX_DOMAINS];
};

struct moat_schemata {
	struct moat_rdt_line line[MOAT_RDT_MAX_RES];
	size_t n;
};

/**
 * moat_rdt_info_read() - read @root/info (and @root/schemata, for AMD's
 * maximum bandwidth).  @amd: the CPU's vendor is AMD (or Hygon);
 * @mbps: mounted with mba_MBps.  Return: 0, or -errno with *@why set.
 */
int moat_rdt_info_read(const char *root, bool amd, bool mbps,
		       struct moat_rdt_info *out, char *why, size_t len);

/**
 * moat_rdt_read() - @dir/@file's content (any resctrl file), trailing
 * newlines cut, into @buf.  Return: 0, or -errno.
 */
int moat_rdt_read(const char *dir, const char *file, char *buf, size_t size);

/** moat_rdt_res_find() - the schema named @name, or NULL. */
const struct moat_rdt_res *moat_rdt_res_find(const struct moat_rdt_info *in,
					     const char *name);

/**
 * moat_schemata_parse() - parse a schemata file's @text (either
 * padding).  Return: 0 or -EINVAL with *@why naming the line.
 */
int moat_schemata_parse(const char *text, struct moat_schemata *out,
			char *why, size_t len);

/** moat_schemata_line() - the line for schema @name in @s, or NULL. */
struct moat_rdt_line *moat_schemata_line(struct moat_schemata *s,
					 const char *name);

/**
 * moat_rdt_check_cbm() - whether @r may take the mask @m: not empty,
 * within cbm_mask, at least min_cbm_bits, contiguous unless sparse.
 * Return: 0 or -EINVAL with *@why.
 */
int moat_rdt_check_cbm(const struct moat_rdt_res *r, __u64 m, char *why,
		       size_t len);

/**
 * moat_rdt_ways_mask() - @ways contiguous ways of @r's cbm_mask, from its
 * lowest (@high false) or highest way.  0 if it has fewer.
 */
__u64 moat_rdt_ways_mask(const struct moat_rdt_res *r, unsigned int ways,
			 bool high);

/**
 * moat_rdt_mb_value() - the value of @r for @pct% of the bandwidth:
 * Intel's percent rounded up to bandwidth_gran, AMD's share of max_bw;
 * never under min_bandwidth (nor under one step).  Return: 0, or
 * -EINVAL (@pct not in 1..100), -EOPNOTSUPP (mba_MBps: no maximum to
 * take a share of) with *@why.
 */
int moat_rdt_mb_value(const struct moat_rdt_res *r, unsigned int pct,
		      unsigned int *out, char *why, size_t len);

/**
 * moat_schemata_diff() - the text to write to move @cur to @want: only
 * the lines with a value that changes, and in them only those domains.
 * Each value is checked against @in first.  Return: the length of the
 * text in @buf (0: nothing to write), or -EINVAL with *@why (nothing to
 * write: a bad value anywhere writes none), -ENOSPC if @buf is short.
 */
int moat_schemata_diff(const struct moat_rdt_info *in,
		       const struct moat_schemata *cur,
		       const struct moat_schemata *want, char *buf,
		       size_t size, char *why, size_t len);

/**
 * moat_rdt_write() - write @text to @group/schemata in one write, a group
 * moat made (through @j; NULL: any, for tests).  On a failed write the
 * kernel says why in @root/info/last_cmd_status: that text, verbatim,
 * goes into *@why.  Return: 0 or -errno.
 */
int moat_rdt_write(struct moat_journal *j, const char *root, const char *group,
		   const char *text, char *why, size_t len);

/**
 * moat_rdt_groups() - the control groups under @root that are not the
 * default group (its directories but info, mon_groups and mon_data),
 * sorted, into *@names (free each, then it); each holds a CLOSID.
 * Return: how many, or -errno.
 */
int moat_rdt_groups(const char *root, char ***names);

/**
 * moat_rdt_closids_left() - CLOSIDs free for new groups, given @ngroups
 * control groups besides the default one (which has CLOSID 0).
 */
unsigned int moat_rdt_closids_left(const struct moat_rdt_info *in,
				   unsigned int ngroups);

/*
 * How many L3 ways a group gets: @all (0: every way) in every cache but
 * those named, e.g. "6" or "6;16=4;17=4" or "0=4;1=6".
 */
struct moat_rdt_ways {
	unsigned int all;
	size_t n;
	unsigned int id[MOAT_RDT_MAX_DOMAINS], ways[MOAT_RDT_MAX_DOMAINS];
};

/**
 * moat_rdt_ways_parse() - parse "[N][;ID=N]..." into @out.  Each N is at
 * most 64 ways; an id at most once.  Return: 0 or -EINVAL with *@why.
 */
int moat_rdt_ways_parse(const char *s, struct moat_rdt_ways *out, char *why,
			size_t len);

/** moat_rdt_ways_for() - the ways @w gives cache @id (0: every way). */
unsigned int moat_rdt_ways_for(const struct moat_rdt_ways *w, unsigned int id);

/** What one control group gets. */
struct moat_rdt_alloc {
	struct moat_rdt_ways l3;
	unsigned int cap;	/* at most this many ways anywhere; 0: none */
	bool high;		/* the highest ways, not the lowest */
	unsigned int mb_pct;	/* % of the bandwidth (100: all) */
};

/**
 * moat_rdt_compose() - the schemata for a group that gets @a, for every
 * domain @dflt (the default group's schemata) has.  Under CDP code and
 * data get the same ways.  A cache id @a names that @dflt lacks is an
 * error.  Return: 0 or -errno with *@why (nothing composed).
 */
int moat_rdt_compose(const struct moat_rdt_info *in,
		     const struct moat_schemata *dflt,
		     const struct moat_rdt_alloc *a, struct moat_schemata *out,
		     char *why, size_t len);

/**
 * moat_rdt_tids_to_move() - of @want (the tids that belong in a group),
 * those neither in @ours (its tasks file) nor in @foreign (other groups'
 * tasks: never taken from them), into @out (room for @nwant).  All
 * three sorted ascending.  Return: how many.
 */
size_t moat_rdt_tids_to_move(const __u32 *want, size_t nwant,
			     const __u32 *ours, size_t nours,
			     const __u32 *foreign, size_t nforeign, __u32 *out);

/**
 * moat_rdt_add_tasks() - write each of the @n @tids to @dir/tasks (a group
 * moat made, or the default group: through @j, NULL for tests), one
 * tid per write, as the kernel requires; a tid that exited since it was
 * listed (ESRCH) is skipped and counted in *@gone.  Return: how many
 * moved, or -errno when the file cannot be written at all.
 */
ssize_t moat_rdt_add_tasks(struct moat_journal *j, const char *dir,
			   const __u32 *tids, size_t n, size_t *gone);

/**
 * moat_rdt_find_mount() - the first resctrl mount in @mountinfo (proc(5)
 * format) at or below @under ("": anywhere; the host root, hostroot.h)
 * into @mnt, and whether its super options have cdp and mba_MBps.
 * Return: 0, -ENOENT (none), -ENAMETOOLONG.
 */
int moat_rdt_find_mount(FILE *mountinfo, const char *under, char *mnt,
			size_t len, bool *cdp, bool *mbps);

/** moat_rdt_cpu_is_amd() - @cpuinfo's vendor_id is AMD's or Hygon's. */
bool moat_rdt_cpu_is_amd(FILE *cpuinfo);

#endif /* MOAT_RESCTRL_H */
