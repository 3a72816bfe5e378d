// SPDX-License-Identifier: GPL-2.0-only
/* Test scaffolding: fixtures, and real cgroups that are always removed. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <criterion/criterion.h>
#include "cgroup.h"
#include "helpers.h"
#include "hist.h"
#include "journal.h"
#include "tasksched.h"

#define MAX_TCG 32
#define MAX_CHILDREN 16

static struct moat_cg_layout layout;
static const struct moat_cg_hierarchy *cpu_h;
static char prefix_dir[PATH_MAX];
static char created[MAX_TCG][PATH_MAX];
static int nr_created;
static pid_t children[MAX_CHILDREN];
static int nr_children;

FILE *fixture_open(const char *name)
{
	const char *dir = getenv("MOAT_FIXTURES");
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir ? dir : "selftests/fixtures",
		 name);
	return fopen(path, "re");
}

const char *source_dir(void)
{
	static char top[PATH_MAX];
	const char *dir = getenv("MOAT_FIXTURES");

	snprintf(top, sizeof(top), "%s/../..", dir ? dir : "selftests/fixtures");
	return top;
}

const char *tcg_skip_reason(bool need_bpf)
{
	static struct moat_cg_layout l;

	if (geteuid())
		return "not root: real cgroups and BPF need root";
	if (need_bpf && access("/sys/kernel/btf/vmlinux", R_OK))
		return "kernel has no BTF (/sys/kernel/btf/vmlinux)";
	/*
	 * A mountinfo that does not parse is moat's failure, not this
	 * machine's lack: no skip, and tcg_setup() fails the test with it.
	 */
	if (!moat_cg_layout_read(&l) && !moat_cg_layout_find(&l, "cpu"))
		return "no cgroup hierarchy has the cpu controller";
	return NULL;
}

const struct moat_cg_hierarchy *tcg_hierarchy(void)
{
	return cpu_h;
}

static int write_file(const char *dir, const char *file, const char *val)
{
	char path[PATH_MAX];
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		err = -errno;
	close(fd);
	return err;
}

int tcg_setup(void)
{
	int err;

	err = moat_cg_layout_read(&layout);
	if (err)
		return err;
	cpu_h = moat_cg_layout_find(&layout, "cpu");
	if (!cpu_h)
		return -ENOENT;
	snprintf(prefix_dir, sizeof(prefix_dir), "%s/moat-test-%d",
		 cpu_h->mnt, (int)getpid());
	if (mkdir(prefix_dir, 0755) && errno != EEXIST)
		return -errno;
	/* On cgroup2 the controllers must be enabled down to our leaves. */
	if (cpu_h->v2) {
		err = write_file(cpu_h->mnt, "cgroup.subtree_control", "+cpu +memory");
		if (!err)
			err = write_file(prefix_dir, "cgroup.subtree_control",
					 "+cpu +memory");
	}
	return err;
}

int tcg_write(const struct tcg *cg, const char *file, const char *val)
{
	return write_file(cg->dir, file, val);
}

void hist_put(struct moat_rqlat_hist *h, double us, __u64 n)
{
	__u64 ns = (__u64)(us * 1000);
	unsigned int slot = 0;

	while (slot + 1 < MOAT_HIST_SLOTS && (ns >> (slot + 1)))
		slot++;
	h->slots[slot] += n;
	h->count += n;
	h->sum_ns += ns * n;
}

long long tcg_number(const struct tcg *cg, const char *file, const char *key)
{
	char path[PATH_MAX + 32], buf[4096], *at = buf;
	long long v = -1;

	snprintf(path, sizeof(path), "%s/%s", cg->dir, file);
	if (moat_kfile_read(path, buf, sizeof(buf)))
		return -1;
	if (key) {
		size_t n = strlen(key);

		for (at = buf; at && (strncmp(at, key, n) || at[n] != ' ');
		     at = strchr(at, '\n'), at = at ? at + 1 : NULL)
			;
		if (!at)
			return -1;
		at += n + 1;
	}
	sscanf(at, "%lld", &v);
	return v;
}

const char *tcg_prefix_dir(void)
{
	return prefix_dir;
}

int tcg_create(const char *name, struct tcg *out)
{
	if (nr_created == MAX_TCG)
		return -E2BIG;
	if ((size_t)snprintf(out->dir, sizeof(out->dir), "%s/%s", prefix_dir,
			     name) >= sizeof(out->dir))
		return -ENAMETOOLONG;
	if (mkdir(out->dir, 0755))
		return -errno;
	strcpy(created[nr_created++], out->dir);
	return moat_cgroup_resolve(cpu_h, out->dir, out->path,
				   sizeof(out->path), &out->id);
}

int tcg_create_many(const char *stem, int n)
{
	char dir[PATH_MAX];
	int i;

	for (i = 0; i < n; i++) {
		if ((size_t)snprintf(dir, sizeof(dir), "%s/%s-%d", prefix_dir, stem,
				     i) >= sizeof(dir))
			return -ENAMETOOLONG;
		if (mkdir(dir, 0755))
			return -errno;
	}
	return 0;
}

int tcg_pick_cpu(void)
{
	cpu_set_t set;
	int cpu, last = 0;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 0;
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &set))
			last = cpu;
	if (CPU_COUNT(&set) > 1) {
		CPU_CLR(last, &set);
		sched_setaffinity(0, sizeof(set), &set);
	}
	return last;
}

void tcg_lock_cpu(void)
{
	int fd = open("/run/moat-selftests-cpu.lock", O_RDWR | O_CREAT | O_CLOEXEC,
		      0600);

	if (fd >= 0)
		flock(fd, LOCK_EX);	/* released when the test process exits */
}

void die_with_parent(pid_t parent, int sig)
{
	if (prctl(PR_SET_PDEATHSIG, sig) || getppid() != parent)
		_exit(99);
}

/*
 * The child is in @cg, on @cpu, when this returns: a test that reads the
 * tree next (or starts moatd, which finds the groups by their tasks)
 * reads it with the child in it, however late the scheduler ran it.
 */
pid_t tcg_spawn(const struct tcg *cg, int cpu, void (*fn)(void *), void *arg)
{
	pid_t child, parent = getpid();
	char pid[32], ok = 0;
	cpu_set_t set;
	int in[2];
	ssize_t n;

	if (nr_children == MAX_CHILDREN)
		return -E2BIG;
	if (pipe2(in, O_CLOEXEC))
		return -errno;
	child = fork();
	if (child < 0) {
		close(in[0]);
		close(in[1]);
		return -errno;
	}
	if (child) {
		children[nr_children++] = child;
		close(in[1]);
		do
			n = read(in[0], &ok, 1);
		while (n < 0 && errno == EINTR);
		close(in[0]);
		if (n == 1)
			return child;
		/* it exited before it was in (100: the cgroup, 101: the CPU) */
		tcg_kill(child);
		return -ECHILD;
	}
	close(in[0]);
	die_with_parent(parent, SIGKILL);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	if (write_file(cg->dir, "cgroup.procs", pid))
		_exit(100);
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		_exit(101);
	if (write(in[1], &ok, 1) != 1)
		_exit(102);
	close(in[1]);
	fn(arg);
	_exit(0);
}

static void forget_child(pid_t pid)
{
	int i;

	for (i = 0; i < nr_children; i++)
		if (children[i] == pid)
			children[i] = children[--nr_children];
}

int tcg_wait(pid_t pid)
{
	int status;

	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	forget_child(pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -ECHILD;
}

void tcg_kill(pid_t pid)
{
	if (pid <= 0)		/* kill(0) or kill(-1): far more than a child */
		return;
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	forget_child(pid);
}

/* A reaped task can linger in its cgroup for a moment: EBUSY. */
static void rmdir_retry(const char *dir)
{
	struct timespec ts = { .tv_nsec = 10 * 1000 * 1000 };
	int i;

	for (i = 0; i < 100 && rmdir(dir) && errno == EBUSY; i++)
		nanosleep(&ts, NULL);
}

/*
 * The empty cgroups tcg_create_many() made, those a test renamed, and
 * any other left below @dir, deepest first.
 */
static void remove_children(const char *dir)
{
	char sub[PATH_MAX];
	struct dirent *de;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name) >=
		    sizeof(sub))
			continue;
		remove_children(sub);
		rmdir_retry(sub);
	}
	if (d)
		closedir(d);
}

void tcg_cleanup(void)
{
	while (nr_children)
		tcg_kill(children[0]);
	/* Children first; rmdir of a cgroup with tasks fails with EBUSY. */
	while (nr_created)
		rmdir_retry(created[--nr_created]);
	if (prefix_dir[0]) {
		remove_children(prefix_dir);
		rmdir_retry(prefix_dir);
		prefix_dir[0] = '\0';
	}
}

void tcg_vskip(void (*teardown)(void), const char *fmt, va_list ap)
{
	char why[512];

	vsnprintf(why, sizeof(why), fmt, ap);
	teardown();
	cr_skip_test("%s", why);
	abort();	/* cr_skip_test() does not return */
}

void tcg_skip(void (*teardown)(void), const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	tcg_vskip(teardown, fmt, ap);
}

void work_hog(void *unused)
{
	volatile unsigned long n = 0;

	for (;;)
		n++;
}

static volatile sig_atomic_t fork_asked;

static void ask_fork(int sig)
{
	(void)sig;
	fork_asked = 1;
}

void work_forker(void *unused)
{
	struct sigaction sa = { .sa_handler = ask_fork };
	pid_t self = getpid();
	sigset_t usr1, none;

	(void)unused;
	sigemptyset(&none);
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	sigaction(SIGUSR1, &sa, NULL);	/* ready: SigCgt has SIGUSR1 */
	for (;;) {
		sigsuspend(&none);
		if (!fork_asked)
			continue;
		fork_asked = 0;
		if (!fork()) {
			die_with_parent(self, SIGKILL);
			for (;;)
				pause();
		}
	}
}

bool forker_ready(pid_t pid)
{
	unsigned long long caught = 0, bit = 1ULL << (SIGUSR1 - 1);
	char path[64], line[256];
	int i;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	for (i = 0; i < 500; i++) {
		FILE *f = fopen(path, "re");

		while (f && fgets(line, sizeof(line), f))
			sscanf(line, "SigCgt: %llx", &caught);
		if (f)
			fclose(f);
		if (caught & bit)
			return true;
		usleep(10000);
	}
	return false;
}

int task_schedstat(pid_t pid, struct task_schedstat *s)
{
	char path[64];
	int n, err = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	n = fscanf(f, "%llu %llu %llu", (unsigned long long *)&s->run_ns,
		   (unsigned long long *)&s->delay_ns,
		   (unsigned long long *)&s->waits);
	if (n != 3)
		err = -EINVAL;
	fclose(f);
	return err;
}

/* @pid's state letter from /proc/PID/stat, after its "(comm)"; 0 if gone. */
static char task_state(pid_t pid)
{
	char path[64], buf[512], *p;
	ssize_t len;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len <= 0)
		return 0;
	buf[len] = 0;
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : 0;
}

bool task_wait_asleep(pid_t pid, int ms)
{
	int i;

	for (i = 0; i <= ms; i++) {
		if (task_state(pid) == 'S')
			return true;
		usleep(1000);
	}
	return false;
}

pid_t tcg_new_thread(const struct tcg *cg, const pid_t *known, size_t n)
{
	char path[PATH_MAX + 16];
	__u32 *tids;
	long nt, i;
	size_t k;
	int tries;

	snprintf(path, sizeof(path), "%s/%s", cg->dir,
		 cpu_h->v2 ? "cgroup.threads" : "tasks");
	for (tries = 0; tries < 500; tries++) {
		pid_t found = 0;

		nt = moat_read_tids(path, &tids);
		for (i = 0; i < nt && !found; i++) {
			for (k = 0; k < n && known[k] != (pid_t)tids[i]; k++)
				;
			if (k == n)
				found = tids[i];
		}
		if (nt > 0)
			free(tids);
		if (found)
			return found;
		usleep(10000);
	}
	return 0;
}

bool sched_wait(pid_t tid, const struct moat_sched *want, int ms, char *got,
		size_t len)
{
	struct moat_sched s;
	int waited = 0;

	for (;;) {
		int err = moat_sched_get(tid, &s);

		if (err) {
			snprintf(got, len, "nothing: %s", strerror(-err));
			return false;
		}
		moat_sched_format(got, len, &s);
		if (moat_sched_equal(&s, want))
			return true;
		if (waited >= ms)
			return false;
		usleep(20000);
		waited += 20;
	}
}

static double thread_cpu_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

void work_periodic(void *arg)
{
	const struct work_periodic *w = arg;
	struct timespec ts = { .tv_nsec = 1000 * 1000 };
	double start;
	int i;

	for (i = 0; i < w->iterations; i++) {
		start = thread_cpu_us();
		while (thread_cpu_us() - start < w->work_us)
			;
		nanosleep(&ts, NULL);
	}
}

void work_memory(void *arg)
{
	const struct work_memory *w = arg;
	size_t len = (size_t)w->mb << 20, i;
	long page = sysconf(_SC_PAGESIZE);
	struct timespec ts = { w->sleep_ms / 1000,
			       (w->sleep_ms % 1000) * 1000000L };
	volatile char *p;
	unsigned char n = 0;

	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	if (p == MAP_FAILED)
		_exit(1);
	for (;;) {
		n++;
		for (i = 0; i < len; i += page)
			p[i] = n;
		nanosleep(&ts, NULL);
	}
}

static pid_t fake_pid;
static char fake_mnt[PATH_MAX];

const char *fake_resctrl_start(const char *args, char *mnt, size_t len)
{
	static char why[PATH_MAX * 4];
	const char *b = getenv("MOAT_BUILD");
	char cmd[PATH_MAX], probe[PATH_MAX + 32];
	pid_t parent;
	int i;

	if (access("/dev/fuse", R_OK | W_OK))
		return "no /dev/fuse here: the FAKE resctrl is a FUSE file system";
	snprintf(fake_mnt, sizeof(fake_mnt), "/tmp/moat-fake-resctrl-%d-XXXXXX",
		 (int)getpid());
	if (!mkdtemp(fake_mnt))
		return "mkdtemp failed";
	snprintf(cmd, sizeof(cmd), "%.*s/selftests/moat-fake-resctrl",
		 PATH_MAX - 64, b ? b : "build");
	parent = getpid();
	fake_pid = fork();
	if (fake_pid < 0)
		return "fork failed";
	if (!fake_pid) {
		char line[PATH_MAX * 4];

		die_with_parent(parent, SIGTERM);
		snprintf(line, sizeof(line), "exec %s %.*s %s", cmd, PATH_MAX, args,
			 fake_mnt);
		execl("/bin/sh", "sh", "-c", line, NULL);
		_exit(127);
	}
	snprintf(probe, sizeof(probe), "%s/info/last_cmd_status", fake_mnt);
	for (i = 0; i < 100; i++) {
		if (!access(probe, R_OK)) {
			snprintf(mnt, len, "%s", fake_mnt);
			return NULL;
		}
		if (waitpid(fake_pid, NULL, WNOHANG) == fake_pid) {
			fake_pid = 0;
			break;
		}
		usleep(20000);
	}
	fake_resctrl_stop();
	snprintf(why, sizeof(why), "%s %.*s could not mount a FUSE file system here",
		 cmd, PATH_MAX, args);
	return why;
}

void fake_resctrl_stop(void)
{
	if (fake_pid > 0) {
		kill(fake_pid, SIGTERM);	/* it unmounts, then exits */
		waitpid(fake_pid, NULL, 0);
		fake_pid = 0;
	}
	if (fake_mnt[0]) {
		umount2(fake_mnt, MNT_DETACH);	/* if it could not */
		rmdir(fake_mnt);
		fake_mnt[0] = '\0';
	}
}
