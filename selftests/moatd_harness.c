// SPDX-License-Identifier: GPL-2.0-only
/*
 * The harness of the tests of moatd as a sysadmin runs it
 * (moatd_harness.h): start it, stop it, ask it, wait for it.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <criterion/criterion.h>
#include <json-c/json.h>
#include <microhttpd.h>
#include "cgroup.h"
#include "helpers.h"
#include "journal.h"
#include "kubestub.h"
#include "moatd_harness.h"
#include "resctrl.h"
#include "tasksched.h"

char dir[64];
char sock[PATH_MAX];
pid_t daemon_pid;

const char *build_dir(void)
{
	const char *b = getenv("MOAT_BUILD");

	return b ? b : "build";
}

static int read_memfd(int fd, char *buf, size_t len)
{
	ssize_t n = pread(fd, buf, len - 1, 0);

	buf[n > 0 ? n : 0] = '\0';
	close(fd);
	return n < 0 ? -errno : 0;
}

/* Run build/<prog> with @args; its stdout in @so, stderr in @se. */
int run(const char *prog, const char *const args[], char *so, char *se)
{
	int ofd = memfd_create("out", 0), efd = memfd_create("err", 0);
	char path[PATH_MAX];
	const char *argv[32];
	pid_t pid, parent = getpid();
	int status, i;

	snprintf(path, sizeof(path), "%s/%s", build_dir(), prog);
	argv[0] = path;
	for (i = 0; args[i] && i < 30; i++)
		argv[i + 1] = args[i];
	argv[i + 1] = NULL;
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		die_with_parent(parent, SIGKILL);
		dup2(ofd, 1);
		dup2(efd, 2);
		execv(path, (char *const *)argv);
		_exit(127);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	read_memfd(ofd, so, OUT_MAX);
	read_memfd(efd, se, OUT_MAX);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* moatctl against the test's moatd. */
int ctl(char *so, char *se, const char *verb, const char *a, const char *b)
{
	const char *args[] = { "--socket", sock, verb, a, b, NULL };

	return run("moatctl", args, so, se);
}

void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* NAME=value strings the next moatd started gets in its environment. */
const char *moatd_env[8];

/* Options the next moatd started gets after the test's own. */
const char *moatd_args[8];

/* A command the next moatd is started under (setpriv ... --), or none. */
const char *moatd_wrap[16];

/*
 * How long moatd's first start of this test took to open its socket, in
 * ms (0: none yet).  A start is mostly the BPF verifier's work, so its
 * time is this machine's speed: 0.2 s here, 3 s in a guest under QEMU's
 * single-threaded TCG.  A restart while the test's hog runs shares the
 * emulating thread with it, and took 3 times as long (8.5 s against 3 s).
 */
static long quiet_start_ms;

long elapsed_ms(const struct timespec *t0)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

/* @pid's CPU time, user and system, in clock ticks; -1 when unknown. */
static long proc_cpu_ticks(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long utime, stime;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	/* proc(5): after "(comm)", state is field 3, utime 14, stime 15 */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu",
			 &utime, &stime) != 2)
		return -1;
	return (long)(utime + stime);
}

/*
 * Start moatd on the test prefix with @config; wait for its socket, or for
 * it to exit.  The wait only catches a moatd that hangs: 10 s, or 8 times
 * the first start's time where that is longer, and past that as long as
 * moatd keeps using the CPU.  A start is work (the verifier; attaching,
 * which patches the kernel's text and waits for every CPU to answer an
 * IPI), and under TCG with the test's hog on the other vCPU its time has
 * a long tail: 3 to 5 times the first start's in 15 restarts, once more
 * than 8.  A moatd that hangs uses no CPU; one that spins is stopped by
 * the test's own timeout.
 */
pid_t start_moatd(const char *socket_path, const char *config,
			 const char *log)
{
	char path[PATH_MAX], root[PATH_MAX];
	pid_t pid, parent = getpid();
	long bound = quiet_start_ms * 8 > 10000 ? quiet_start_ms * 8 : 10000;
	long last_cpu = -1;
	struct timespec t0, moved;
	bool said = false;
	struct stat st;
	int i;

	snprintf(path, sizeof(path), "%s/moatd", build_dir());
	snprintf(root, sizeof(root), "%s", tcg_prefix_dir());
	pid = fork();
	cr_assert_geq(pid, 0);
	if (!pid) {
		const char *all[48], *argv[32] = { path, "--foreground", "--socket",
						   socket_path, "--config", config,
						   "--cgroup-root", root, "--state-dir", dir };
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644), n = 10, w;

		/* SIGTERM: a moatd whose test timed out puts back what it set */
		die_with_parent(parent, SIGTERM);
		dup2(fd, 2);
		for (i = 0; moatd_env[i]; i++)
			putenv((char *)moatd_env[i]);
		for (i = 0; moatd_args[i]; i++)
			argv[n++] = moatd_args[i];
		for (w = 0; moatd_wrap[w]; w++)
			all[w] = moatd_wrap[w];
		for (i = 0; i <= n; i++)
			all[w + i] = argv[i];
		execv(all[0], (char *const *)all);
		_exit(127);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	moved = t0;
	for (;;) {
		if (elapsed_ms(&t0) >= bound) {
			long cpu = proc_cpu_ticks(pid);

			if (last_cpu < 0 && cpu >= 0) {		/* the baseline */
				last_cpu = cpu;
				clock_gettime(CLOCK_MONOTONIC, &moved);
			} else if (cpu > last_cpu) {
				if (!said)
					fprintf(stderr, "moatd: no socket after %ld ms (bound %ld ms), and it is using the CPU: waiting on\n",
						elapsed_ms(&t0), bound);
				said = true;
				last_cpu = cpu;
				clock_gettime(CLOCK_MONOTONIC, &moved);
			} else if (elapsed_ms(&moved) >= 2000) {
				break;
			}
		}
		if (!stat(socket_path, &st)) {
			long ms = elapsed_ms(&t0) + 1;

			if (!quiet_start_ms)
				quiet_start_ms = ms;
			else if (ms > 3 * quiet_start_ms)
				fprintf(stderr, "moatd: a slow start: socket after %ld ms, the first start's after %ld ms (bound %ld ms)\n",
					ms, quiet_start_ms, bound);
			return pid;
		}
		if (waitpid(pid, NULL, WNOHANG) == pid)
			break;
		sleep_ms(50);
	}
	fprintf(stderr, "moatd: no socket after %ld ms (bound %ld ms; no CPU used in the last %ld ms)\n",
		elapsed_ms(&t0), bound, elapsed_ms(&moved));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	{
		char cmd[PATH_MAX + 32];

		snprintf(cmd, sizeof(cmd), "tail -n 20 %s >&2", log);
		if (system(cmd))
			fprintf(stderr, "no log at %s\n", log);
	}
	cr_assert_fail("moatd did not open %s (its log's end is above)", socket_path);
	return -1;
}

/*
 * Where stop() sends moatd's SIGTERM when it runs under a wrapper that
 * does not pass signals on (unshare --fork blocks them and waits): moatd
 * itself, the wrapper's child.  0: daemon_pid is moatd.
 */
pid_t daemon_inner;

void stop(pid_t *pid)
{
	if (*pid > 0) {
		kill(pid == &daemon_pid && daemon_inner ? daemon_inner : *pid, SIGTERM);
		waitpid(*pid, NULL, 0);
		*pid = 0;
	}
	if (pid == &daemon_pid)
		daemon_inner = 0;
}

void own_moatd(void)
{
}

/*
 * The running test's .init, which Criterion runs after the suite's.  Its
 * extra data lies in a section of Criterion's where nothing aligns it
 * (UBSan: a misaligned member access): copied out, not read in place.
 */
static void (*test_init(void))(void)
{
	const char *data = (const char *)criterion_current_test->data;
	void (*init)(void);

	memcpy(&init, data + offsetof(struct criterion_test_extra_data, init), sizeof(init));
	return init;
}

void setup(void)
{
	const char *why = tcg_skip_reason(true);
	char conf[PATH_MAX], log[PATH_MAX];

	if (why)
		cr_skip_test("%s", why);
	cr_assert_eq(tcg_setup(), 0);
	snprintf(dir, sizeof(dir), "/tmp/moat-test-%d", (int)getpid());
	cr_assert(!mkdir(dir, 0700) || errno == EEXIST);
	snprintf(sock, sizeof(sock), "%s/moatd.sock", dir);
	snprintf(conf, sizeof(conf), "%s/moat.conf", dir);
	snprintf(log, sizeof(log), "%s/moatd.log", dir);
	/* reloads when a test says (SIGHUP), not when it writes the file */
	write_file(conf, "# test config\nperiod_ms = 100\nrules/web = web-* lc\n"
			 "rules/batch = batch-* be\nhttp/listen = 127.0.0.1:0\n"
			 "settings/watch_config = 0\n");
	if (test_init() != own_moatd)
		daemon_pid = start_moatd(sock, conf, log);
}

void teardown(void)
{
	char cmd[PATH_MAX + 16];

	stop(&daemon_pid);
	fake_resctrl_stop();
	tcg_cleanup();
	if (dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd))
			fprintf(stderr, "could not remove %s\n", dir);
	}
}

TestSuite(moatd, .init = setup, .fini = teardown, .timeout = 60);

/*
 * Skip the test, saying why.  A skip does not run the suite's .fini: what
 * setup() and the test made (moatd, the cgroups, the directory) goes
 * first, or it stays behind.
 */
void skip(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tcg_vskip(teardown, fmt, ap);
}

void host_only(const char *what)
{
	if (getenv("MOAT_GUEST"))
		skip("no kernel's: %s (the host's suite runs it)", what);
}

char out[OUT_MAX], err[OUT_MAX];

/* Poll moatctl get @path until it succeeds (@want 0) or fails (1). */
int wait_get(const char *path, int want, int periods)
{
	int i, rc = -1;

	for (i = 0; i < periods; i++) {
		rc = ctl(out, err, "get", path, NULL);
		if (rc == want)
			return i;
		sleep_ms(100);
	}
	cr_assert_eq(rc, want, "get %s: exit %d after %d periods: %s", path, rc,
		     periods, err);
	return -1;
}

/* A knob as a number; NAN where it cannot be read. */
double get_number(const char *path)
{
	if (ctl(out, err, "get", path, NULL))
		return NAN;
	return strtod(out, NULL);
}

double wait_number(const char *path, double want, int ms)
{
	double v = get_number(path);
	int i;

	for (i = 0; i < ms / 100 && !(v >= want); i++) {
		sleep_ms(100);
		v = get_number(path);
	}
	return v;
}

double series_value(const char *body, const char *series)
{
	size_t len = strlen(series);
	const char *at = body;

	while ((at = strstr(at, series))) {
		if ((at == body || at[-1] == '\n') && at[len] == ' ')
			return strtod(at + len + 1, NULL);
		at += len;
	}
	return NAN;
}

double moatd_cycles(void)
{
	static char scrape[1 << 22];
	char *body;

	if (http_get(http_port(), "/metrics", scrape, sizeof(scrape), &body) != 200)
		return NAN;
	return series_value(body, "moat_cycles_total");
}

double wait_cycles(int n, int ms)
{
	double c0 = moatd_cycles(), c = c0;
	int i;

	for (i = 0; i < ms / 50 && !(c - c0 >= n); i++) {
		sleep_ms(50);
		c = moatd_cycles();
	}
	return c - c0;
}

/* How often @needle is in @hay. */
int count_of(const char *hay, const char *needle)
{
	int n = 0;

	for (; (hay = strstr(hay, needle)); hay += strlen(needle))
		n++;
	return n;
}

/*
 * moatd started afresh with @text as its config file @name in the test's
 * directory, its log in moatd.log there.  The old socket goes first, or
 * the wait for it would see the old moatd's.
 */
void start_with_config(const char *name, const char *text)
{
	char conf[PATH_MAX], log[PATH_MAX];

	snprintf(conf, sizeof(conf), "%s/%s", dir, name);
	snprintf(log, sizeof(log), "%s/moatd.log", dir);
	write_file(conf, text);
	unlink(sock);
	daemon_pid = start_moatd(sock, conf, log);
}

void restart(void)
{
	char conf[PATH_MAX], log[PATH_MAX];

	stop(&daemon_pid);
	snprintf(conf, sizeof(conf), "%s/moat.conf", dir);
	snprintf(log, sizeof(log), "%s/moatd.log", dir);
	daemon_pid = start_moatd(sock, conf, log);
}

void work_pause(void *unused)
{
	pause();
}

/*
 * Poll moatctl get @path, every 100 ms up to @tries times, until its
 * value has @want in it; its last value stays in out.
 */
bool wait_knob(const char *path, const char *want, int tries)
{
	int i;

	for (i = 0; i < tries; i++) {
		if (!ctl(out, err, "get", path, NULL) && strstr(out, want))
			return true;
		sleep_ms(100);
	}
	return false;
}

/* The cpu files an actuator could write, v1's and v2's. */
const char *const v1_files[] = {
	"cpu.cfs_quota_us", "cpu.cfs_period_us", "cpu.shares", "cpu.idle", NULL
};

const char *const v2_files[] = {
	"cpu.max", "cpu.weight", "cpu.idle", "memory.high", NULL
};

/* Every file an actuator could write in @cg, concatenated. */
void snapshot(const struct tcg *cg, char *buf, size_t len)
{
	const char *const *f = tcg_hierarchy()->v2 ? v2_files : v1_files;
	size_t n = 0;

	for (; *f; f++) {
		char path[PATH_MAX + 32];
		FILE *fp;

		snprintf(path, sizeof(path), "%s/%s", cg->dir, *f);
		fp = fopen(path, "r");
		if (!fp)
			continue;	/* cpu.idle before v5.15 */
		n += snprintf(buf + n, len - n, "%s: ", *f);
		n += fread(buf + n, 1, len - n - 1, fp);
		fclose(fp);
	}
	buf[n] = '\0';
}

/*
 * Enforcement.  An LC probe (work_periodic) and a BE hog share one CPU,
 * each in its own cgroup; moatd enforces a 1 ms p99 target that the
 * probe misses by far while the hog runs.  The probe needs ~40% of the
 * CPU, as in test_rqlat_bpf.c: a lighter one keeps enough lag to preempt
 * the hog at once on every wake-up, and never waits.
 */
struct tcg lc_cg, be_cg;
pid_t hog_pid, probe_pid;
char be_before[4096];

/*
 * The contention, and moatd told to enforce (@mode) a 1 ms p99 target.
 * Steps are not judged (test_control.c covers that): an undone step would
 * race the checks of what moatd wrote.
 */
void contend(const char *mode)
{
	static struct work_periodic probe = { 1000000, 1500 };
	int cpu;

	tcg_lock_cpu();
	cpu = tcg_pick_cpu();
	cr_assert_eq(tcg_create("web-lc", &lc_cg), 0);
	cr_assert_eq(tcg_create("batch-hog", &be_cg), 0);
	snapshot(&be_cg, be_before, sizeof(be_before));
	hog_pid = tcg_spawn(&be_cg, cpu, work_hog, NULL);
	probe_pid = tcg_spawn(&lc_cg, cpu, work_periodic, &probe);
	cr_assert(hog_pid > 0 && probe_pid > 0);
	wait_get("groups/batch.batch-hog/path", 0, 30);
	wait_get("groups/web.web-lc/path", 0, 30);
	{
		const char *args[] = { "--socket", sock, "set", "--runtime",
				       "lc/rqlat_p99_target_us", "1000", NULL };

		cr_assert_eq(run("moatctl", args, out, err), 0, "%s", err);
		args[4] = "enforce/min_waits";
		args[5] = "5";
		cr_assert_eq(run("moatctl", args, out, err), 0, "%s", err);
		args[4] = "enforce/cpu_prio_backoff_periods";
		args[5] = "0";
		cr_assert_eq(run("moatctl", args, out, err), 0, "%s", err);
		args[4] = "enforce/cpu_backoff_periods";
		cr_assert_eq(run("moatctl", args, out, err), 0, "%s", err);
		args[4] = "mode";
		args[5] = mode;
		cr_assert_eq(run("moatctl", args, out, err), 0, "%s", err);
	}
}

/* What moatd saw and said, to stderr, for a failure's reader. */
void print_moatd_state(void)
{
	char log[PATH_MAX], cmd[PATH_MAX + 64];

	ctl(out, err, "tree", "groups", NULL);
	fprintf(stderr, "moatd's groups:\n%s", out);
	snprintf(log, sizeof(log), "%s/moatd.log", dir);
	snprintf(cmd, sizeof(cmd), "tail -n 30 %s >&2", log);
	if (system(cmd))
		fprintf(stderr, "no log at %s\n", log);
}

/*
 * Periods (100 ms) until the hog's group is throttled; -1: not in @max,
 * with what moatd saw and said printed.
 */
int wait_throttled(int max)
{
	int i;

	for (i = 0; i < max; i++) {
		if (!ctl(out, err, "get", "groups/batch.batch-hog/throttles", NULL) &&
		    strtoul(out, NULL, 10) > 0)
			return i;
		sleep_ms(100);
	}
	print_moatd_state();
	return -1;
}

void expect_restored(const char *when)
{
	char now[4096];

	snapshot(&be_cg, now, sizeof(now));
	if (strcmp(now, be_before))
		print_moatd_state();
	cr_expect_str_eq(now, be_before, "%s: the hog's files were\n%s\nand are\n%s",
			 when, be_before, now);
}

void expect_throttled(void)
{
	char now[4096];

	snapshot(&be_cg, now, sizeof(now));
	cr_expect_str_neq(now, be_before, "throttled, yet the files are unchanged");
}

void set_runtime(const char *knob, const char *val)
{
	const char *args[] = { "--socket", sock, "set", "--runtime", knob, val,
			       NULL };

	cr_assert_eq(run("moatctl", args, out, err), 0, "%s", err);
}

char page[1 << 22];

/*
 * HTTP: moatd's /metrics, /hints and /healthz (test config: http/listen
 * 127.0.0.1:0, the port in http/port).
 */
int http_port(void)
{
	cr_assert_eq(ctl(out, err, "get", "http/port", NULL), 0, "%s", err);
	return atoi(out);
}

int tcp_connect(int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	cr_assert_geq(fd, 0);
	cr_assert_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0,
		     "connect to port %d: %s", port, strerror(errno));
	return fd;
}

/*
 * Send @req (a whole request) to 127.0.0.1:@port, read the response into
 * @buf until the server closes.  Return: the status, or -1 when there
 * was none; *@body: past the headers.
 */
int http_req(int port, const char *req, char *buf, size_t len,
		    char **body)
{
	size_t n = 0;
	ssize_t r;
	int fd = tcp_connect(port), status = -1;

	cr_assert_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	while (n + 1 < len && (r = read(fd, buf + n, len - n - 1)) > 0)
		n += r;
	buf[n] = '\0';
	close(fd);
	sscanf(buf, "HTTP/1.%*d %d", &status);
	*body = strstr(buf, "\r\n\r\n");
	*body = *body ? *body + 4 : buf + n;
	return status;
}

int http_get(int port, const char *path, char *buf, size_t len,
		    char **body)
{
	char req[512];

	snprintf(req, sizeof(req),
		 "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
		 path);
	return http_req(port, req, buf, len, body);
}

/* The kB of "@key:" in /proc/meminfo, in bytes. */
double proc_meminfo(const char *key)
{
	FILE *f = fopen("/proc/meminfo", "r");
	unsigned long long kb;
	char line[128];
	double v = -1;

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, strlen(key)) && line[strlen(key)] == ':' &&
		    sscanf(line + strlen(key) + 1, "%llu", &kb) == 1)
			v = kb * 1024.0;
	fclose(f);
	return v;
}

int free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	getsockname(fd, (struct sockaddr *)&sa, &len);
	port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;
	size_t len = 0;

	cr_assert_not_null(f, "%s", path);
	cr_assert_geq(getdelim(&buf, &len, '\0', f), 0);
	fclose(f);
	return buf;
}

/* Make the kubelet-shaped cgroup @name: v2 gives its parent's controllers on. */
void kube_cgroup(const char *name, struct tcg *cg, struct tcg *parent)
{
	if (parent && tcg_hierarchy()->v2)
		cr_assert_eq(tcg_write(parent, "cgroup.subtree_control", "+cpu +memory"),
			     0, "%s: cgroup.subtree_control", parent->dir);
	cr_assert_eq(tcg_create(name, cg), 0, "%s", name);
}

static const char *const tier_names[KUBE_TIERS] = { "burstable", "besteffort" };

void kube_set_shares(const struct tcg *cg, unsigned int shares)
{
	char v[32];

	/* runc's and kubelet's conversion: 2..262144 shares to 1..10000 */
	if (tcg_hierarchy()->v2)
		snprintf(v, sizeof(v), "%u", 1 + (shares - 2) * 9999 / 262142);
	else
		snprintf(v, sizeof(v), "%u", shares);
	cr_assert_eq(tcg_write(cg, tcg_hierarchy()->v2 ? "cpu.weight" : "cpu.shares", v),
		     0, "%s: %s", cg->dir, v);
}

long kube_weight(const struct tcg *cg)
{
	char path[PATH_MAX + 16];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", cg->dir,
		 tcg_hierarchy()->v2 ? "cpu.weight" : "cpu.shares");
	f = fopen(path, "r");
	if (f && fscanf(f, "%ld", &v) != 1)
		v = -1;
	if (f)
		fclose(f);
	return v;
}

void kube_node(struct kube_node *n, bool systemd)
{
	char name[128];
	int t;

	n->systemd = systemd;
	n->burstable_shares = 0;
	kube_cgroup(systemd ? "kubepods.slice" : "kubepods", &n->kp, NULL);
	kube_set_shares(&n->kp, 1024 * sysconf(_SC_NPROCESSORS_ONLN));
	for (t = 0; t < KUBE_TIERS; t++) {
		if (systemd)
			snprintf(name, sizeof(name), "kubepods.slice/kubepods-%s.slice",
				 tier_names[t]);
		else
			snprintf(name, sizeof(name), "kubepods/%s", tier_names[t]);
		kube_cgroup(name, &n->tier[t], &n->kp);
		kube_set_shares(&n->tier[t], 2);
	}
}

void kube_add_pod(struct kube_node *n, struct kube_pod *p, int nr)
{
	char uid[64], name[PATH_MAX], *c;

	snprintf(uid, sizeof(uid), "%s", p->uid);
	if (n->systemd) {
		for (c = uid; *c; c++)
			*c = *c == '-' ? '_' : *c;
		snprintf(name, sizeof(name), "%s/kubepods-%s-pod%s.slice",
			 n->tier[p->tier].dir + strlen(tcg_prefix_dir()) + 1,
			 tier_names[p->tier], uid);
	} else {
		snprintf(name, sizeof(name), "%s/pod%s",
			 n->tier[p->tier].dir + strlen(tcg_prefix_dir()) + 1, uid);
	}
	kube_cgroup(name, &p->pod, &n->tier[p->tier]);
	if (p->tier == KUBE_BESTEFFORT)
		p->shares = 2;
	kube_set_shares(&p->pod, p->shares);
	snprintf(name + strlen(name), sizeof(name) - strlen(name),
		 n->systemd ? "/cri-containerd-%064x.scope" : "/%064x", nr);
	kube_cgroup(name, &p->ctr, &p->pod);
	kube_set_shares(&p->ctr, p->shares);
	if (p->tier == KUBE_BURSTABLE) {
		n->burstable_shares += p->shares;
		kube_set_shares(&n->tier[KUBE_BURSTABLE], n->burstable_shares);
	}
}

void kube_tree(struct kube_tree *t)
{
	static const char *const pods[2] = {
		"kubepods/burstable/pod" KUBE_LC_UID,
		"kubepods/besteffort/pod" KUBE_BE_UID,
	};
	static const char *const ctrs[2] = {
		"1111111111111111111111111111111111111111111111111111111111111111",
		"2222222222222222222222222222222222222222222222222222222222222222",
	};
	char name[2 * PATH_MAX];
	int i;

	kube_cgroup("kubepods", &t->kp, NULL);
	kube_cgroup("kubepods/burstable", &t->qos[0], &t->kp);
	kube_cgroup("kubepods/besteffort", &t->qos[1], &t->kp);
	for (i = 0; i < 2; i++) {
		kube_cgroup(pods[i], &t->pod[i], &t->qos[i]);
		snprintf(name, sizeof(name), "%s/%s", pods[i], ctrs[i]);
		kube_cgroup(name, &t->ctr[i], &t->pod[i]);
	}
}

/* The numbers in a knob's history ("-": none), at most @max, into @v. */
int numbers(const char *hist, double *v, int max)
{
	const char *p = hist;
	char *end;
	int n = 0;

	while (*p && n < max) {
		double x = strtod(p, &end);

		if (end == p) {		/* "-" or a separator */
			p++;
			continue;
		}
		v[n++] = x;
		p = end;
	}
	return n;
}

/* Wait up to @ms for moatd's log to hold @needle at least @n times. */
int log_count(const char *needle)
{
	char log[PATH_MAX], *text;
	int c;

	snprintf(log, sizeof(log), "%s/moatd.log", dir);
	text = slurp(log);
	c = count_of(text, needle);
	free(text);
	return c;
}

bool wait_log(const char *needle, int n, int ms)
{
	int i;

	for (i = 0; i <= ms / 50; i++) {
		if (log_count(needle) >= n)
			return true;
		sleep_ms(50);
	}
	return false;
}

/*
 * The fault library (selftests/fault.c) preloaded into the next moatd
 * started, failing the @nth call of @fn; the sanitized moatd's runtime is
 * in the executable, so the preload comes after it, as it must.
 */
static char fault_env[2][PATH_MAX];

void preload_fault(const char *fn, int nth, const char *arm)
{
	snprintf(fault_env[0], sizeof(fault_env[0]), "LD_PRELOAD=%s/selftests/libmoat-fault.so",
		 build_dir());
	if (arm)
		snprintf(fault_env[1], sizeof(fault_env[1]), "MOAT_FAULT=%s:%d:%d:%s", fn, nth,
			 EIO, arm);
	else
		snprintf(fault_env[1], sizeof(fault_env[1]), "MOAT_FAULT=%s:%d", fn, nth);
	cr_assert_eq(access(fault_env[0] + strlen("LD_PRELOAD="), R_OK), 0, "%s", fault_env[0]);
	moatd_env[0] = fault_env[0];
	moatd_env[1] = fault_env[1];
	moatd_env[2] = NULL;
}

static char stub_env[4][PATH_MAX + 64];

struct MHD_Daemon *stub_start(void)
{
	char sa[PATH_MAX];
	struct MHD_Daemon *api;
	unsigned int port;

	if (system("command -v openssl >/dev/null"))
		skip("no openssl to make the stub's certificate (tools/deps.sh installs it)");
	snprintf(sa, sizeof(sa), "%s/sa", dir);
	api = stub_serve(sa, &port);
	cr_assert_not_null(api, "the stub API server did not start");
	snprintf(stub_env[0], sizeof(stub_env[0]), "KUBERNETES_SERVICE_HOST=127.0.0.1");
	snprintf(stub_env[1], sizeof(stub_env[1]), "KUBERNETES_SERVICE_PORT=%u", port);
	snprintf(stub_env[2], sizeof(stub_env[2]), "NODE_NAME=test-node");
	snprintf(stub_env[3], sizeof(stub_env[3]), "MOAT_KUBE_SA_DIR=%s", sa);
	moatd_env[0] = stub_env[0];
	moatd_env[1] = stub_env[1];
	moatd_env[2] = stub_env[2];
	moatd_env[3] = stub_env[3];
	return api;
}
