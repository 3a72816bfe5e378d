/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_SELFTESTS_HELPERS_H
#define MOAT_SELFTESTS_HELPERS_H

#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>
#include <linux/types.h>
#include "mountinfo.h"

/* A fixture file from selftests/fixtures, opened for reading. */
FILE *fixture_open(const char *name);
/* The source tree's top directory (from MOAT_FIXTURES). */
const char *source_dir(void);

/*
 * Real cgroups for tests, in the cpu controller's hierarchy, under a
 * prefix unique to the test process ("moat-test-<pid>").  Everything
 * made here, processes included, is undone by tcg_cleanup(), which the
 * tests run as their .fini so it also runs when an assertion fails.
 */
struct tcg {
	char dir[PATH_MAX];	/* directory */
	char path[PATH_MAX];	/* hierarchy path */
	__u64 id;
};

/**
 * tcg_skip_reason() - why real cgroup / BPF tests cannot run here, or
 * NULL when they can.
 */
const char *tcg_skip_reason(bool need_bpf);

/** tcg_hierarchy() - the cpu controller's hierarchy (after tcg_setup()). */
const struct moat_cg_hierarchy *tcg_hierarchy(void);

int tcg_setup(void);
/* The directory of the test's prefix cgroup (after tcg_setup()). */
const char *tcg_prefix_dir(void);
int tcg_create(const char *name, struct tcg *out);
/*
 * Make @n empty cgroups @stem-0 .. @stem-(n-1) below the prefix, for
 * tests of scale; they hold no task, and tcg_cleanup() removes them.
 */
int tcg_create_many(const char *stem, int n);

/*
 * The CPU the contention tests use: the last one this process may run
 * on.  Moves the calling process off it when there is another.
 */
int tcg_pick_cpu(void);

/* Wait for, then hold until exit, the lock of tests that time the CPU. */
void tcg_lock_cpu(void);

/* Write @val to @cg's @file (a test's own cgroup only). */
int tcg_write(const struct tcg *cg, const char *file, const char *val);
/* @n waits of @us each into @h, in the slot the BPF programs would use. */
struct moat_rqlat_hist;
void hist_put(struct moat_rqlat_hist *h, double us, __u64 n);
/* A number from @cg's @file: the value after "@key " where @key is set; -1: none. */
long long tcg_number(const struct tcg *cg, const char *file, const char *key);

/*
 * Run @fn(@arg) in a child process in @cg, pinned to @cpu: its pid, once
 * it is in @cg on @cpu; -errno, or -ECHILD when it could not get there.
 */
pid_t tcg_spawn(const struct tcg *cg, int cpu, void (*fn)(void *), void *arg);

/* Wait for a child tcg_spawn() started; 0 when it exited with status 0. */
int tcg_wait(pid_t pid);

/* Stop a child tcg_spawn() started (SIGKILL), and reap it. */
void tcg_kill(pid_t pid);

void tcg_cleanup(void);

/*
 * Skip the test, saying why, after @teardown (the suite's .fini, or
 * tcg_cleanup()): Criterion runs no .fini after a skip, and the test's
 * cgroups, tcg_setup()'s prefix included, would stay behind.
 */
void tcg_skip(void (*teardown)(void), const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));
void tcg_vskip(void (*teardown)(void), const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0), noreturn));

/*
 * The FAKE resctrl (selftests/fake_resctrl.c, a FUSE file system that
 * behaves as the kernel's resctrl does) mounted at @mnt, a new directory,
 * with moat-fake-resctrl's options @args ("--layout amd --closids 2").
 * NULL: it runs; else why it cannot here (no /dev/fuse, as in the guest).
 */
const char *fake_resctrl_start(const char *args, char *mnt, size_t len);
/* Unmount it and stop it; fake_resctrl_start() again is fine after. */
void fake_resctrl_stop(void);

/*
 * In a child just forked from @parent: die with @sig when the parent
 * dies.  Criterion kills a test that times out without running its
 * .fini, and a hog or a moatd it had started would otherwise run on
 * into the next tests, and fail them too (seen in the guest).
 */
void die_with_parent(pid_t parent, int sig);

/*
 * What the kernel's sched_info counted for task @pid (/proc/PID/schedstat,
 * CONFIG_SCHED_INFO): its time on a CPU, its time queued for one, and
 * its arrivals on a CPU after being queued, i.e. its run-queue waits.
 */
struct task_schedstat {
	__u64 run_ns;
	__u64 delay_ns;
	__u64 waits;
};
int task_schedstat(pid_t pid, struct task_schedstat *s);

/* Whether @pid is asleep (state S in /proc/PID/stat), polling up to @ms. */
bool task_wait_asleep(pid_t pid, int ms);

/* Workloads for tcg_spawn(). */
void work_hog(void *unused);		/* spin until killed */

/*
 * A latency-critical server in miniature: @iterations times, compute for
 * @work_us of CPU time (a request), then sleep 1 ms (the next one).  The
 * work matters: a task that only sleeps keeps enough lag under EEVDF to
 * preempt any hog at once and never waits.
 */
struct work_periodic {
	int iterations;
	int work_us;
};
void work_periodic(void *struct_work_periodic);

/*
 * A process whose threads and children inherit what is set on it: it
 * sleeps, and at each SIGUSR1 forks a child that sleeps too (and dies
 * with it).  Its children are what a restore must sweep.  It is ready
 * for the signal once /proc/<pid>/status's SigCgt has it.
 */
void work_forker(void *unused);

/* Whether @pid is ready for work_forker()'s SIGUSR1, waiting up to 5 s. */
bool forker_ready(pid_t pid);

/*
 * A thread in @cg that is none of the @n @known, waiting up to 5 s for
 * one to come; 0: none came.
 */
pid_t tcg_new_thread(const struct tcg *cg, const pid_t *known, size_t n);

struct moat_sched;
/*
 * Whether thread @tid has the scheduling attributes @want, polling up to
 * @ms; what it has last, formatted, in @got.
 */
bool sched_wait(pid_t tid, const struct moat_sched *want, int ms, char *got,
		size_t len);

/*
 * Memory in use: map @mb MiB of anonymous memory and write a byte to each
 * page, then sleep @sleep_ms, and again, until killed: its pages stay
 * hot, and a page reclaimed (swapped out) is faulted back in and charged
 * again.
 */
struct work_memory {
	int mb;
	int sleep_ms;
};
void work_memory(void *struct_work_memory);

#endif /* MOAT_SELFTESTS_HELPERS_H */
