/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_SELFTESTS_MOATD_HARNESS_H
#define MOAT_SELFTESTS_MOATD_HARNESS_H

/*
 * The harness of the tests of moatd as a sysadmin runs it
 * (test_moatd*.c): the real daemon on real cgroups the test makes under
 * its prefix (helpers.h), driven by the real moatctl through the control
 * socket and by HTTP.  Every test of the suite "moatd" starts with a
 * moatd on the default config (setup(): period 100 ms, rules web-* lc
 * and batch-* be, HTTP on a free port), or with none where it starts its
 * own (own_moatd), and ends with everything put away (teardown(), also
 * after a failed assertion; skip() before a skip).
 * The pieces a test is made of: start moatd on a config or a tree,
 * contend, wait for what it must do, check, stop.
 */
#include <limits.h>
#include <stdbool.h>
#include <time.h>
#include <sys/types.h>
#include "helpers.h"

#define OUT_MAX 65536

/* The directory of the test's sockets, configs and logs; moatd's socket. */
extern char dir[64];
extern char sock[PATH_MAX];
/* The test's moatd, or 0; where it runs under a wrapper that passes no
 * signal on (unshare --fork), the moatd inside, which stop() signals. */
extern pid_t daemon_pid, daemon_inner;
/* The last moatctl's stdout and stderr (ctl(), wait_get()...). */
extern char out[OUT_MAX], err[OUT_MAX];
/* An HTTP reply, headers and body (http_get()). */
extern char page[1 << 22];

/* NAME=value strings the next moatd started gets in its environment. */
extern const char *moatd_env[8];
/* Options the next moatd started gets after the test's own. */
extern const char *moatd_args[8];
/* A command the next moatd is started under (setpriv ... --), or none. */
extern const char *moatd_wrap[16];

/* Where the programs are: $MOAT_BUILD, else build. */
const char *build_dir(void);
/* Run build/<prog> with @args; its stdout in @so, stderr in @se. */
int run(const char *prog, const char *const args[], char *so, char *se);
/* moatctl against the test's moatd: `moatctl VERB A B`. */
int ctl(char *so, char *se, const char *verb, const char *a, const char *b);
void write_file(const char *path, const char *text);
void sleep_ms(long ms);
/* Milliseconds since *@t0 (CLOCK_MONOTONIC). */
long elapsed_ms(const struct timespec *t0);
/* The whole file at @path, malloc()ed, NUL-terminated ("" if none). */
char *slurp(const char *path);
/* How many times @needle is in @hay. */
int count_of(const char *hay, const char *needle);
/* The numbers in a knob's history ("-": none), at most @max, into @v. */
int numbers(const char *hist, double *v, int max);
/* The kB of "@key:" in /proc/meminfo, in bytes. */
double proc_meminfo(const char *key);

/*
 * Start moatd on the test prefix with @config, logging to @log; wait for
 * its socket (the bound is in moatd_harness.c), else fail the test.
 */
pid_t start_moatd(const char *socket_path, const char *config, const char *log);
/* SIGTERM to *@pid (moatd itself under a wrapper), reaped; *@pid = 0. */
void stop(pid_t *pid);
/* Write @text to dir/@name and start moatd on it (logging to dir/moatd.log). */
void start_with_config(const char *name, const char *text);
/* Start moatd again on dir/moat.conf. */
void restart(void);
/*
 * The fault library (selftests/fault.c) preloaded into the next moatd
 * started, failing the @nth call of @fn; with @arm, the @nth call made
 * once the file @arm exists (the test makes it when it is ready for
 * the fault), with EIO.
 */
void preload_fault(const char *fn, int nth, const char *arm);

/*
 * The suite's .init and .fini.  setup() starts moatd on the default
 * config, unless the test is Test(moatd, name, .init = own_moatd): one
 * that starts its own (start_with_config(), restart()) before it asks
 * anything of a moatd, and would stop the default's unused.  A start is
 * the verifier's and libbpf's work: 0.4 s on this project's machine,
 * 0.8 s before bpf_probe.c parsed the kernel's BTF once for an object's
 * probes (2026-12-07), and more under emulation.
 */
void setup(void);
void teardown(void);
void own_moatd(void);
/* Skip the test, saying why; what setup() and the test made goes first. */
void skip(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/*
 * Skip it in the cgroup v2 guests (vmtest.sh sets MOAT_GUEST): a test of
 * moat's side of the API server, @what, which no kernel changes; the
 * host's suite and its sanitized build run it.  The guests run under
 * emulation, where its waits cost most of make check's time.
 */
void host_only(const char *what);

/* Poll `moatctl get @path` until it succeeds (@want 0) or fails (1). */
int wait_get(const char *path, int want, int periods);
/* Poll `moatctl get @path` every 100 ms, @tries times, for @want in it. */
bool wait_knob(const char *path, const char *want, int tries);
/* Wait up to @ms for moatd's log to hold @needle at least @n times. */
bool wait_log(const char *needle, int n, int ms);
/* How many times moatd's log holds @needle now. */
int log_count(const char *needle);
/* `moatctl set --runtime @knob @val`, which must succeed. */
void set_runtime(const char *knob, const char *val);
/* A knob as a number; NAN where it cannot be read. */
double get_number(const char *path);
/*
 * Poll knob @path every 100 ms until its number is at least @want, up
 * to @ms of polls; its last number.  For what moatd must do a number of
 * times: however slow this machine, the test waits for the count, not
 * for a time.
 */
double wait_number(const char *path, double want, int ms);

/* The value of series @series (name and labels) in a scrape; NAN if none. */
double series_value(const char *body, const char *series);
/* moatd's control cycles so far (moat_cycles_total in /metrics); NAN: no answer. */
double moatd_cycles(void);
/*
 * Wait for moatd to run @n more cycles, up to @ms: however slow this
 * machine, what a cycle must do is then done.  Return: the cycles run.
 */
double wait_cycles(int n, int ms);

/* HTTP to the test's moatd: its port (http/port), a request, a GET. */
int http_port(void);
int tcp_connect(int port);
int http_req(int port, const char *req, char *buf, size_t len, char **body);
int http_get(int port, const char *path, char *buf, size_t len, char **body);
/* A TCP port nothing listens on now. */
int free_port(void);

/* A child that waits for a signal (pause()), for tcg_spawn(). */
void work_pause(void *unused);

/*
 * The cpu files moat may write (v1 and v2), each with its content, of
 * @cg into @buf: what "put back" and "left alone" are compared by.
 */
extern const char *const v1_files[], *const v2_files[];
void snapshot(const struct tcg *cg, char *buf, size_t len);

/*
 * The contention of the enforce tests: web-lc (an LC probe) and
 * batch-hog (a BE hog) on one CPU, moatd set to @mode with a 1 ms p99
 * target and no judging; the BE group's files before, in be_before.
 */
extern struct tcg lc_cg, be_cg;
extern pid_t hog_pid, probe_pid;
extern char be_before[4096];
void contend(const char *mode);
/* What moatd saw and said, to stderr, for a failure's reader. */
void print_moatd_state(void);
/* Wait up to @max periods for a step on the hog; the periods it took. */
int wait_throttled(int max);
#define UNTHROTTLED	"cpu_prio=max cpu=max memory=max l3=max mb=max\n"
/* The hog's files as they were, and nothing held (@when: for the message). */
void expect_restored(const char *when);
/* The hog's files changed, and its throttle says so. */
void expect_throttled(void);

/*
 * The tree kubelet makes (the cgroupfs driver): an LC server's burstable
 * pod and a BE besteffort pod, each with one container, where the tasks
 * go.  Index 0 is the LC side, 1 the BE side.
 */
#define KUBE_LC_UID "0a1b2c3d-4e5f-6789-abcd-ef0123456789"
#define KUBE_BE_UID "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
struct kube_tree {
	struct tcg kp, qos[2], pod[2], ctr[2];
};
/* Make the kubelet-shaped cgroup @name: v2 gives its parent's controllers on. */
void kube_cgroup(const char *name, struct tcg *cg, struct tcg *parent);
void kube_tree(struct kube_tree *t);

/*
 * A node's pods as kubelet makes them with either cgroup driver, the
 * weights as kubelet sets them: kubepods 1024 shares a CPU, the
 * burstable tier the sum of its pods' requests, besteffort 2, a pod and
 * its container their request; on v2 converted as kubelet converts
 * (kube_set_shares()).  cgroupfs: kubepods/<tier>/pod<uid>/<id>;
 * systemd: kubepods.slice/kubepods-<tier>.slice/
 * kubepods-<tier>-pod<uid, '_' for '-'>.slice/cri-containerd-<id>.scope.
 */
enum kube_tier { KUBE_BURSTABLE, KUBE_BESTEFFORT, KUBE_TIERS };
struct kube_node {
	bool systemd;
	struct tcg kp, tier[KUBE_TIERS];
	unsigned int burstable_shares;	/* the sum of its pods' */
};
struct kube_pod {
	const char *uid;
	enum kube_tier tier;
	unsigned int shares;	/* its CPU request as cpu.shares; besteffort: 2 */
	struct tcg pod, ctr;
};
void kube_node(struct kube_node *n, bool systemd);
/* Pod @p (its uid, tier and shares set) and its container number @nr. */
void kube_add_pod(struct kube_node *n, struct kube_pod *p, int nr);
/* @cg's weight as kubelet writes @shares: v1 cpu.shares, v2 cpu.weight. */
void kube_set_shares(const struct tcg *cg, unsigned int shares);
/* @cg's cpu.shares (v1) or cpu.weight (v2) as it reads; -1: none. */
long kube_weight(const struct tcg *cg);

#endif /* MOAT_SELFTESTS_MOATD_HARNESS_H */
