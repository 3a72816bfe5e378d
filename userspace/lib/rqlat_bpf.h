/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_RQLAT_BPF_H
#define MOAT_RQLAT_BPF_H

#include <stdbool.h>
#include <linux/types.h>
#include "rqlat.h"	/* bpf/rqlat.h: the map types */

/* The loaded and attached rqlat programs and their maps. */
struct moat_rqlat;

struct moat_rqlat_opts {
	bool force_raw_tp;	/* use raw_tp even where tp_btf works */
};

/**
 * moat_rqlat_open() - probe the kernel, load and attach the rqlat
 * programs: tp_btf where the kernel supports it, raw_tp otherwise.  Logs
 * one line saying what was found and chosen.  On a failed load the
 * libbpf/verifier output is kept for moat_log_libbpf_tail().
 *
 * Return: 0, -EOPNOTSUPP when the kernel has no BTF, -EPERM without the
 * privileges, or the load/attach error.
 */
int moat_rqlat_open(const struct moat_rqlat_opts *opts, struct moat_rqlat **out);
void moat_rqlat_close(struct moat_rqlat *r);

/** moat_rqlat_attach_kind() - "tp_btf" or "raw_tp". */
const char *moat_rqlat_attach_kind(const struct moat_rqlat *r);

/** moat_rqlat_watch() - start (@on) or stop charging @cgid's waits. */
int moat_rqlat_watch(struct moat_rqlat *r, __u64 cgid, bool on);

typedef int (*moat_rqlat_hist_fn)(__u64 cgid, const struct moat_rqlat_hist *h,
				  void *ctx);
typedef int (*moat_rqlat_blame_fn)(const struct moat_blame_key *k,
				   const struct moat_blame_val *v, void *ctx);

/**
 * moat_rqlat_for_each_hist() - call @fn with each cgroup's histogram since
 * load, summed over CPUs.  A non-zero return from @fn stops the walk and
 * is returned.
 */
int moat_rqlat_for_each_hist(struct moat_rqlat *r, moat_rqlat_hist_fn fn,
			     void *ctx);

/** moat_rqlat_for_each_blame() - the same for the blame map. */
int moat_rqlat_for_each_blame(struct moat_rqlat *r, moat_rqlat_blame_fn fn,
			      void *ctx);

typedef int (*moat_rqlat_prog_fn)(const char *name, __u64 run_ns,
				  __u64 runs, void *ctx);

/**
 * moat_rqlat_for_each_prog() - call @fn with each loaded program's name and
 * the kernel's run time and run count for it (0 unless
 * kernel.bpf_stats_enabled is on).
 */
int moat_rqlat_for_each_prog(struct moat_rqlat *r, moat_rqlat_prog_fn fn,
			     void *ctx);

/**
 * moat_rqlat_forget() - drop what the maps hold for the @n cgroups in
 * @ids, which were removed: their histograms, their watched entries, and
 * every blame entry naming them.  Without this the bounded maps fill with
 * the dead over a long run, and new cgroups are dropped.
 */
int moat_rqlat_forget(struct moat_rqlat *r, const __u64 *ids, size_t n);

/**
 * moat_rqlat_hash_marks() - starts the tp_btf programs kept in the pid
 * hash since load, for a task without its local storage (bpf/rqlat.bpf.c:
 * "Where the start is kept"); 0 on raw_tp, which always uses the hash.
 */
__u64 moat_rqlat_hash_marks(const struct moat_rqlat *r);

/** moat_rqlat_drops() - events not recorded since load, by reason. */
void moat_rqlat_drops(const struct moat_rqlat *r, __u64 drops[MOAT_DROP_NR]);

const char *moat_rqlat_drop_name(enum moat_rqlat_drop why);

#endif /* MOAT_RQLAT_BPF_H */
