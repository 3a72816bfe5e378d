/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_SELFTESTS_SIM_H
#define MOAT_SELFTESTS_SIM_H

/*
 * The closed-loop simulator (test_sim.c, Documentation/testing.rst):
 *
 *  - sim_kernel.c, a FAKE of the kernel's cgroup files: an in-memory
 *    tree that takes the place of the kernel's through
 *    moat_kfile_set_ops(), and holds each write to the rules of
 *    Documentation/admin-guide/cgroup-v2.rst and scheduler/sched-bwc.rst
 *    (the values each file takes, cpu.idle against the weight, a burst
 *    over its quota, a v1 parent's quota under a child's), with failures
 *    on cue and a record of every write and who made it; and moat's
 *    own files (its journal, its record of evictions), kept in memory
 *    as a crash would leave them, their saves failing on cue;
 *  - test_sim.c, the plant: a node's pods with requests, limits and
 *    containers, CPU shared by weight and bounded by quota, the waits
 *    and throttling that follow, memory and its pressure, owners that
 *    rewrite files (kubelet's resizes, systemd's reloads), pods that come
 *    and go; it makes each period's snapshot the real policies decide on.
 *
 * Seeded and deterministic: the same seed, the same run.
 */
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

struct moat_kfile_ops;

#define SIM_ROOT	"/sim-cgroup"	/* where the fake tree is mounted */
#define SIM_FILES	8		/* the files of a cgroup moat may touch */
#define SIM_VALUE_MAX	64
#define SIM_RING	16		/* moat's writes a file remembers */
#define SIM_SAVED	4		/* moat's own files it keeps */

/* Who wrote a file. */
enum sim_writer { SIM_MOAT, SIM_OWNER };

struct sim_file {
	char name[24];
	char value[SIM_VALUE_MAX];
	char owner[SIM_VALUE_MAX];	/* what its owner (kubelet, systemd) last set */
	unsigned int moat_writes;	/* by moat, in all */
	unsigned int refused;		/* moat's writes the kernel refused */
	/* moat's last writes: when, and the number written ("max": INFINITY) */
	double moat_at[SIM_RING], moat_v[SIM_RING];
	unsigned int ring;
};

struct sim_cg {
	char path[256];			/* below SIM_ROOT */
	int parent;			/* its index; -1: the root */
	bool alive;
	struct sim_file f[SIM_FILES];
	int nr;
};

/* A write moat made that broke a rule of the simulator's invariants. */
struct sim_kernel {
	bool v2;
	struct sim_cg *cg;
	int nr, cap;
	double now;			/* the plant's clock, s */
	/* failures on cue: the next @fail_n writes of a file named @fail_file */
	char fail_file[24];
	int fail_err, fail_n;
	unsigned long failed_on_cue;	/* moat's writes failed so */
	/*
	 * moat's files in its state directory (the journal, the record of
	 * evictions) as their last saves left them: what a crash leaves.
	 * @saves went through, @save_failures did not; the next
	 * @save_fail_n fail with @save_err.
	 */
	struct sim_saved {
		char file[256];
		char *buf;
		size_t len;
	} saved[SIM_SAVED];
	unsigned long saves, save_failures;
	int save_err, save_fail_n;
	/* every write moat made to a file it must never write */
	char forbidden[512];
	unsigned int writes, refusals;
	/* whether a path may be written by moat at all (the plant's rules) */
	bool (*may_write)(const char *path, const char *file, const char *value,
			  char *why, size_t len);
	/* told of each write of moat's the kernel took: cgroup @cg's @file */
	void (*wrote)(int cg, const char *file);
};

extern struct sim_kernel simk;

/* A fresh tree, cgroup v1 (cpu.shares...) or v2 (cpu.weight...), in place of the kernel's. */
void sim_kernel_start(bool v2);
/* The kernel's files back. */
void sim_kernel_stop(void);
/* A cgroup below @parent (NULL: the root), @name; its index. */
int sim_mkdir(const char *parent, const char *name);
/* It goes: its files ENOENT from now on. */
void sim_rmdir(const char *path);
/* Its index, or -1. */
int sim_find(const char *path);
/* The full path of cgroup @i's file @file, in @buf. */
const char *sim_path(int i, const char *file, char *buf, size_t len);
/* File @file of cgroup @i, "" when none. */
const char *sim_get(int i, const char *file);
/* An owner's write (kubelet, systemd): held to the kernel's rules; 0 or -errno. */
int sim_owner_write(int i, const char *file, const char *value);
/* Its file operations, and moat's writes through another (a dead process's). */
const struct moat_kfile_ops *sim_kernel_ops(void);
void sim_kernel_set_put(int (*put)(const char *path, const char *value));
/* The next @n writes of any file named @file fail with @err. */
void sim_fail(const char *file, int err, int n);
/* The next @n saves of moat's files fail with @err (a disk full, gone). */
void sim_fail_saves(int err, int n);
/* What the last save of @file left, NULL where none; its length in *@len. */
const char *sim_saved(const char *file, size_t *len);
/*
 * How often moat's writes to @f since @from went the other way than the
 * write before: a ramp that converges has none, a value cycled between
 * two has one a write.
 */
int sim_reversals(const struct sim_file *f, double from);

#endif /* MOAT_SELFTESTS_SIM_H */
