// SPDX-License-Identifier: GPL-2.0-only
/*
 * moatd: finds the groups on this node, observes them every period,
 * protects the LC ones in enforce mode, and serves everything it knows and
 * every tunable as one knob tree on its control socket.
 *
 * This file is the loop: the modules (moatd_modules[]), start-up and
 * shut-down through them, and cycle(), the one place that says the
 * order of a period's steps (Documentation/design.rst).
 */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include "bpf_probe.h"
#include "caps.h"
#include "cgroup.h"
#include "cpi.h"
#include "ctl.h"
#include "delay.h"
#include "enforce.h"
#include "groups.h"
#include "hints.h"
#include "hostroot.h"
#include "http.h"
#include "evict.h"
#include "events.h"
#include "burst.h"
#include "kube.h"
#include "pods.h"
#include "log.h"
#include "node.h"
#include "observe.h"
#include "rdt.h"
#include "sdnotify.h"
#include "server.h"
#include "settings.h"
#include "units.h"

#define DEFAULT_CONFIG		"/etc/moat/moat.conf"
#define DEFAULT_STATE_DIR	"/var/lib/moat"
#define MAX_POLL		40

/* Each module, at its place in enum moatd_mod: the order they open. */
const struct moatd_module *const moatd_modules[MOD_NR] = {
	[MOD_SETTINGS] = &settings_module,
	[MOD_GROUPS] = &groups_module,
	[MOD_NODE] = &node_module,
	[MOD_DELAY] = &delay_module,
	[MOD_OBSERVE] = &observe_module,
	[MOD_SIGNALS] = &signals_module,
	[MOD_CPI] = &cpi_module,
	[MOD_ENFORCE] = &enforce_module,
	[MOD_RDT] = &rdt_module,
	[MOD_HINTS] = &hints_module,
	[MOD_HTTP] = &http_module,
	[MOD_KUBE] = &kube_module,
	[MOD_PODS] = &pods_module,
	[MOD_EVICT] = &evict_module,
	[MOD_EVENTS] = &events_module,
	[MOD_BURST] = &burst_module,
};

struct options {
	const char *config, *cgroup_root, *state_dir, *socket, *socket_group;
	const char *host_root;
	const char *mode, *listen;
	bool config_given, foreground, restore_only, stay;
	int verbose;
};

static const char *const mode_names[] = { "observe", "shadow", "enforce", NULL };

static const char usage[] =
"usage: moatd [--config FILE] [--host-root DIR] [--cgroup-root DIR] [--state-dir DIR]\n"
"             [--socket PATH] [--socket-group GROUP] [--mode observe|shadow|enforce]\n"
"             [--listen ADDR:PORT] [--foreground] [-v]\n"
"       moatd --restore-only [--stay] [--host-root DIR] [--state-dir DIR] [-v]\n"
"\n"
"  -c, --config FILE       knob settings, 'path = value' lines\n"
"                          (default " DEFAULT_CONFIG ", if it exists)\n"
"  -H, --host-root DIR     the host's /sys/fs/cgroup, /sys/fs/resctrl and /proc\n"
"                          are mounted below DIR (in a pod: /host; default /)\n"
"  -r, --cgroup-root DIR   look for groups only below this cgroup\n"
"                          (default: the cpu controller's whole hierarchy)\n"
"  -d, --state-dir DIR     keep what moatctl set changed in DIR/moat.state\n"
"                          (default " DEFAULT_STATE_DIR "; '' keeps nothing)\n"
"  -s, --socket PATH       control socket (default " MOAT_CTL_SOCKET ")\n"
"  -g, --socket-group GRP  let this group read the socket (mode 0660)\n"
"  -m, --mode MODE         observe, shadow or enforce; wins over the config\n"
"  -l, --listen ADDR:PORT  serve /metrics, /hints and /healthz over HTTP here;\n"
"                          wins over the config (default 127.0.0.1:9590;\n"
"                          '' serves no HTTP)\n"
"  -f, --foreground        do not detach\n"
"      --restore-only      put back what the journal in the state directory\n"
"                          lists (a moatd that did not stop cleanly), and\n"
"                          exit: 0 when all of it is back\n"
"      --stay              with --restore-only: once all of it is back, wait\n"
"                          for SIGTERM or SIGINT, then exit 0 (the main\n"
"                          container of deploy/cleanup/'s DaemonSet)\n"
"  -v, --verbose           debug messages; twice: libbpf's too\n";

static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "host-root", required_argument, NULL, 'H' },
		{ "cgroup-root", required_argument, NULL, 'r' },
		{ "state-dir", required_argument, NULL, 'd' },
		{ "socket", required_argument, NULL, 's' },
		{ "socket-group", required_argument, NULL, 'g' },
		{ "mode", required_argument, NULL, 'm' },
		{ "listen", required_argument, NULL, 'l' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "restore-only", no_argument, NULL, 'R' },
		{ "stay", no_argument, NULL, 'S' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	int c;

	o->config = DEFAULT_CONFIG;
	o->state_dir = DEFAULT_STATE_DIR;
	o->socket = MOAT_CTL_SOCKET;
	while ((c = getopt_long(argc, argv, "c:H:r:d:s:g:m:l:fvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			o->config = optarg;
			o->config_given = true;
			break;
		case 'H':
			o->host_root = optarg;
			break;
		case 'r':
			o->cgroup_root = optarg;
			break;
		case 'd':
			o->state_dir = optarg;
			break;
		case 's':
			o->socket = optarg;
			break;
		case 'g':
			o->socket_group = optarg;
			break;
		case 'm':
			o->mode = optarg;
			break;
		case 'l':
			o->listen = optarg;
			break;
		case 'f':
			o->foreground = true;
			break;
		case 'R':
			o->restore_only = true;
			break;
		case 'S':
			o->stay = true;
			break;
		case 'v':
			o->verbose++;
			break;
		case 'h':
			fputs(usage, stdout);
			exit(0);
		default:
			fputs(usage, stderr);
			return -EINVAL;
		}
	}
	if (optind < argc) {
		pr_err("unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	if (o->stay && !o->restore_only) {
		pr_err("--stay: only with --restore-only");
		return -EINVAL;
	}
	return 0;
}

static int show_version(const struct moat_knob *k, char *buf, size_t len)
{
	return snprintf(buf, len, "%s", MOAT_VERSION) >= (int)len ? -EOVERFLOW : 0;
}

static void store_period(const struct moat_knob *k, unsigned int u,
			 const char *val)
{
	struct moatd *d = k->owner;

	d->period_ms = u;
	d->period_changed = true;
}

/*
 * Leaving enforce mode puts back everything enforcement changed; leaving
 * shadow forgets what it would have held, so that enforce starts from
 * the kernel's values, not from steps never taken.  With a journal that
 * did not decode, enforce is refused, from the config, the command line
 * or moatctl alike: its saves would replace the only record of what an
 * earlier moatd changed.  Shadow writes nothing, and is allowed.
 */
static void store_mode(const struct moat_knob *k, unsigned int u,
		       const char *val)
{
	struct moatd *d = k->owner;

	if (u == MOATD_ENFORCE && d->journal_unreadable[0]) {
		pr_err("mode enforce refused: the journal %s does not decode; moatd stays in observe until it is checked and removed (moatd.rst, \"A journal that does not decode\")",
		       d->journal_unreadable);
		return;
	}
	if (d->mode != MOATD_OBSERVE && u != d->mode)
		moatd_restore(d, u == MOATD_OBSERVE ? "mode observe" :
			      u == MOATD_SHADOW ? "mode shadow" : "mode enforce");
	d->mode = u;
}

static int show_cycle_us(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd *d = k->owner;

	return snprintf(buf, len, "%.0f", d->cycle_us) >= (int)len ? -EOVERFLOW : 0;
}

static int show_journal_unreadable(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd *d = k->owner;

	return snprintf(buf, len, "%s", d->journal_unreadable) >= (int)len ? -EOVERFLOW : 0;
}

static int add_base_knobs(struct moatd *d)
{
	const struct moat_knob knobs[] = {
		{ .path = "version", .type = MOAT_KNOB_SHOW, .show = show_version },
		{ .path = "journal_unreadable", .type = MOAT_KNOB_SHOW,
		  .show = show_journal_unreadable },
		{ .path = "mode", .type = MOAT_KNOB_CHOICE, .writable = true,
		  .choices = mode_names, .data = &d->mode, .store = store_mode },
		{ .path = "period_ms", .type = MOAT_KNOB_U32, .writable = true,
		  .min = 50, .max = 60000, .data = &d->period_ms,
		  .store = store_period },
		{ .path = "cycle_us", .type = MOAT_KNOB_SHOW, .show = show_cycle_us },
	};

	return moat_knob_add_all(d->tree, "", knobs,
				 sizeof(knobs) / sizeof(knobs[0]), d);
}

static int setup_cgroups(struct moatd *d, const struct options *o)
{
	char path[PATH_MAX];
	__u64 id;
	int err;

	err = moat_cg_layout_read(&d->layout);
	if (err)
		return err;
	d->cpu = moat_cg_layout_find(&d->layout, "cpu");
	if (!d->cpu) {
		pr_err("no cgroup hierarchy has the cpu controller");
		return -ENOENT;
	}
	/* On v1, usage and memory live in hierarchies of their own. */
	if (!d->cpu->v2) {
		d->cpuacct = moat_cg_layout_find(&d->layout, "cpuacct");
		d->memory = moat_cg_layout_find(&d->layout, "memory");
		if (d->cpuacct && d->cpuacct->v2)
			d->cpuacct = NULL;
		if (d->memory && d->memory->v2)
			d->memory = NULL;
	}
	d->scan = *d->cpu;
	if (o->cgroup_root) {
		err = moat_cgroup_resolve(d->cpu, o->cgroup_root, path,
					  sizeof(path), &id);
		if (err) {
			pr_err("--cgroup-root %s: %s", o->cgroup_root,
			       err == -ENOENT ? "no such cgroup in the cpu hierarchy" :
			       strerror(-err));
			return err;
		}
		strcpy(d->scan.root, path);
		err = moat_cgroup_dir(d->cpu, path, d->scan.mnt, sizeof(d->scan.mnt));
		if (err)
			return err;
	}
	pr_info("cgroups: %s; cpu controller on %s at %s; cpu usage from %s; groups looked for below %s",
		moat_cg_mode_name(d->layout.mode), d->cpu->v2 ? "cgroup2" : "cgroup v1",
		d->cpu->mnt, d->cpu->v2 ? "cpu.stat" :
		d->cpuacct ? "cpuacct.usage" : "nowhere (no cpuacct)",
		d->scan.root);
	return 0;
}

/*
 * --host-root: where this process sees the host's kernel interfaces
 * (hostroot.h).  Said once, with what a pod without the host's PID
 * namespace cannot do: the tids in cgroup.threads are the reader's, and
 * a task of another namespace reads as 0, so neither delay accounting
 * nor resctrl's task moves find the host's tasks.
 */
static int set_host_root(const struct options *o)
{
	char host_ns[PATH_MAX];
	int err;

	if (!o->host_root)
		return 0;
	err = moat_host_root_set(o->host_root);
	if (err) {
		pr_err("--host-root %s: %s", o->host_root,
		       err == -EINVAL ? "not an absolute path without '..'" :
		       strerror(-err));
		return err;
	}
	if (!*moat_host_root())
		return 0;
	moat_host_path(host_ns, sizeof(host_ns), "/proc/self");
	err = moat_in_host_pid_ns();
	if (err < 0)
		pr_warn("host root %s: no %s (the host's /proc is not mounted there): /proc/pressure, /proc/stat and kernel.task_delayacct are read there",
			moat_host_root(), host_ns);
	else if (!err)
		pr_warn("host root %s: moatd is not in the host's PID namespace (hostPID): delay accounting, resctrl's task moves and the per-task levers see none of the host's tasks",
			moat_host_root());
	pr_info("host root %s: cgroup and resctrl mounts looked for below it, /proc read there",
		moat_host_root());
	return 0;
}

/*
 * Root is not required, the capabilities of the features are (lib/caps.h,
 * Documentation/deploy.rst): say once which ones are missing and what
 * goes without them, and stop where the mode cannot work: enforce, as a
 * uid that cannot write root's cgroup files.
 */
static int check_privileges(const struct moatd *d)
{
	const struct moat_cap_use *u;
	uid_t euid = geteuid();
	int missing = 0;

	for (u = moat_cap_uses; u->name; u++) {
		/* root owns the cgroup files: it writes them without */
		if (moat_cap_effective(u->cap) || (u->cap == CAP_DAC_OVERRIDE && !euid))
			continue;
		pr_info("privileges: euid %u without %s: %s", euid, u->name, u->what);
		missing++;
	}
	if (!missing)
		pr_info("privileges: euid %u, every capability moatd uses", euid);
	if (d->mode == MOATD_ENFORCE && euid && !moat_cap_effective(CAP_DAC_OVERRIDE)) {
		pr_err("mode enforce: euid %u without CAP_DAC_OVERRIDE cannot write root's cgroup files",
		       euid);
		return -EPERM;
	}
	return 0;
}

/*
 * A group keeps up to four cgroup files open (observe.c): 2000 fds at 500
 * groups, over the soft limit of 1024 most services start with.  moatd
 * waits with poll() and epoll, never select(), so it may take the hard
 * limit.
 */
static void raise_nofile(void)
{
	struct rlimit r;

	if (getrlimit(RLIMIT_NOFILE, &r) || r.rlim_cur >= r.rlim_max)
		return;
	pr_debug("open files: soft limit %llu raised to the hard limit %llu",
		 (unsigned long long)r.rlim_cur, (unsigned long long)r.rlim_max);
	r.rlim_cur = r.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &r))
		pr_warn("open files: setrlimit: %s", strerror(errno));
}

/* Say in @dir's lock file that this process holds it. */
static void lock_owner(int fd)
{
	char pid[32];
	int n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());

	if (ftruncate(fd, 0) || pwrite(fd, pid, n, 0) != n)
		pr_warn("state lock: cannot write the pid: %s", strerror(errno));
}

/*
 * One moatd per state directory: its journal holds the originals of what
 * it changed, and a second moatd on it would put them back under the
 * first, and rewrite its journal.  flock() on DIR/lock, held for moatd's
 * life (it goes with the process, however that ends); the file says
 * whose it is.  Return: the lock's fd, -1 for no state directory, or
 * -errno (said).
 */
static int lock_state_dir(const char *dir)
{
	char path[PATH_MAX], owner[32] = "";
	int fd, err;

	if (!*dir)
		return -1;
	if (mkdir(dir, 0700) && errno != EEXIST) {
		err = -errno;
		pr_err("state directory %s: %s", dir, strerror(errno));
		return err;
	}
	if ((size_t)snprintf(path, sizeof(path), "%s/lock", dir) >= sizeof(path)) {
		pr_err("--state-dir %s: path too long", dir);
		return -ENAMETOOLONG;
	}
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		err = -errno;
		pr_err("state directory %s: lock %s: %s", dir, path, strerror(errno));
		return err;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		err = -errno;
		if (err == -EWOULDBLOCK) {
			ssize_t n = pread(fd, owner, sizeof(owner) - 1, 0);

			owner[n > 0 ? n : 0] = '\0';
			owner[strcspn(owner, "\n")] = '\0';
			pr_err("state directory %s: in use by moatd pid %s (%s): one moatd per state directory, or each would put back what the other set",
			       dir, *owner ? owner : "unknown", path);
		} else {
			pr_err("state directory %s: lock %s: %s", dir, path,
			       strerror(-err));
		}
		close(fd);
		return err;
	}
	lock_owner(fd);
	return fd;
}

static int arm_timer(int fd, unsigned int ms)
{
	struct itimerspec its = {
		.it_interval = { ms / 1000, (ms % 1000) * 1000000L },
		.it_value = { ms / 1000, (ms % 1000) * 1000000L },
	};

	return timerfd_settime(fd, 0, &its, NULL) ? -errno : 0;
}

static double now_us(void)
{
	return moatd_mono_s() * 1e6;
}

/* Take the cgroup events in; the tasks among them go to resctrl at once. */
static void take_events(struct moatd *d)
{
	if (groups_take_events(d))
		rdt_take_tasks(d);
}

/* The windows of this period join the groups' history, whole. */
static void commit(struct moatd *d)
{
	size_t i;

	for (i = 0; i < d->nr_groups; i++) {
		struct moatd_group *g = d->groups[i];

		g->history[g->history_next++ % GROUP_HISTORY] = (struct group_past){
			.rqlat_p99_us = g->win.rqlat_p99_us,
			.rqlat_wp99_us = g->win.rqlat_wp99_us,
			.rqlat_ap99_us = g->win.rqlat_ap99_us,
			.cpi = g->win.cpi,
		};
	}
}

const char *const moatd_stage_names[STAGE_NR] = {
	[STAGE_GROUPS] = "groups", [STAGE_NODE] = "node", [STAGE_DELAY] = "delay",
	[STAGE_OBSERVE] = "observe", [STAGE_CPI] = "cpi", [STAGE_RDT] = "rdt",
	[STAGE_UNITS] = "units", [STAGE_ENFORCE] = "enforce",
	[STAGE_COMMIT] = "commit",
};

/* This thread's CPU time, ns: a cycle's stages run on the main thread. */
static __u64 thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Charge the CPU time since *@t to stage @s; *@t: now. */
static void stage_done(struct moatd *d, enum moatd_stage s, __u64 *t)
{
	__u64 now = thread_cpu_ns();

	d->stage_cpu_ns[s] += now - *t;
	*t = now;
}

/*
 * One period, in the order the data flows (Documentation/design.rst):
 * the groups; the sources, each read once; what is derived from them;
 * the policies, which read only the period; the actuators, the only
 * writers, through the journal; then the period is committed, for the
 * reporters to read until the next one.
 */
static void cycle(struct moatd *d)
{
	struct period *p = &d->period;
	struct timespec now;
	double start = now_us();
	__u64 t = thread_cpu_ns();
	int err;

	/* the groups */
	take_events(d);
	groups_update(d);
	pods_update(d);		/* who they are, from the API server */
	moatd_index_groups(d);
	stage_done(d, STAGE_GROUPS, &t);

	/* the sources */
	clock_gettime(CLOCK_MONOTONIC, &now);
	p->secs = p->at.tv_sec ? (now.tv_sec - p->at.tv_sec) +
				 (now.tv_nsec - p->at.tv_nsec) / 1e9 : 0;
	p->at = now;
	clock_gettime(CLOCK_REALTIME, &p->wall);
	node_sample(d, &p->node);
	stage_done(d, STAGE_NODE, &t);
	delay_sample(d, p);	/* run-queue waits and their blame */
	stage_done(d, STAGE_DELAY, &t);
	p->nr_gone = 0;		/* (the cgroup events' removed ids, forgotten) */
	observe_sample(d, p);	/* the cgroup files */
	stage_done(d, STAGE_OBSERVE, &t);
	cpi_sample(d, p);	/* PMU counters */
	stage_done(d, STAGE_CPI, &t);
	rdt_sample(d, p);	/* resctrl: BE's originals, monitoring */
	stage_done(d, STAGE_RDT, &t);

	/* derived, once, for everyone after */
	if (units_build(d, p))
		pr_warn("out of memory: no units this period");
	stage_done(d, STAGE_UNITS, &t);
	enforce_sample(d, p);	/* the originals a first step starts from */
	burst_sample(d, p);	/* throttled LC groups' quotas and bursts */

	/* the policies: the period in, a plan out */
	d->plan.nr = 0;
	d->plan.nr_burst = 0;
	stage_done(d, STAGE_ENFORCE, &t);
	cpi_detect(d, p);
	stage_done(d, STAGE_CPI, &t);
	enforce_decide(d, p, &d->plan);
	burst_decide(d, p, &d->plan);	/* throttled LC groups' burst */
	evict_decide(d, p, &d->plan);	/* the last resort */

	/* the actuators: the plan out, through the journal */
	enforce_act(d, &d->plan);
	burst_act(d, &d->plan);
	evict_act(d, &d->plan);
	stage_done(d, STAGE_ENFORCE, &t);
	err = rdt_act(d, &d->plan);
	stage_done(d, STAGE_RDT, &t);
	/* the steps on resctrl's BE class happened only if its write did */
	enforce_commit_rdt(d, &d->plan, err);
	events_act(d);		/* the steps' Events on their pods */

	/* committed: reporters read it from here on */
	commit(d);
	d->cycle_us = now_us() - start;
	d->cycles++;
	clock_gettime(CLOCK_MONOTONIC, &d->last_cycle);
	d->cycle_period_ms = d->period_ms;
	kube_publish(d);
	stage_done(d, STAGE_COMMIT, &t);
}

/*
 * Tell the service manager (a Type=notify unit) what moatd does: READY=1
 * once the first cycle is done and every module started, RELOADING=1
 * around a SIGHUP, STOPPING=1 while it puts values back, WATCHDOG=1 after
 * each cycle.  Nothing without $NOTIFY_SOCKET; a failure is said once.
 */
static __attribute__((format(printf, 1, 2))) void notify(const char *fmt, ...)
{
	static bool failed;
	char msg[256];
	va_list ap;
	int err;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	err = moat_sd_notify(msg);
	if (err < 0 && !failed) {
		failed = true;
		pr_warn("service manager: cannot notify $NOTIFY_SOCKET: %s",
			strerror(-err));
	}
}

/* The signals moatd handles, read from a signalfd in run(). */
static void stop_signals(sigset_t *mask)
{
	sigemptyset(mask);
	sigaddset(mask, SIGINT);
	sigaddset(mask, SIGTERM);
	sigaddset(mask, SIGHUP);
}

/*
 * A new period_ms on the timer; where the kernel refuses it, said, and
 * period_ms back to the period in force (@armed), which it must show.
 */
static void rearm(struct moatd *d, int tfd, unsigned int *armed)
{
	int err = arm_timer(tfd, d->period_ms);

	if (err) {
		pr_err("period_ms %u: the timer refused it (%s): the period stays %u ms",
		       d->period_ms, strerror(-err), *armed);
		d->period_ms = *armed;
		return;
	}
	*armed = d->period_ms;
}

static int run(struct moatd *d, struct server *srv)
{
	struct pollfd pfd[MAX_POLL];
	unsigned int armed = d->period_ms;
	int tfd, sfd, efd, err = 0;
	unsigned long long watchdog;
	sigset_t mask;

	stop_signals(&mask);	/* blocked since main() began */
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (sfd < 0 || tfd < 0 || arm_timer(tfd, d->period_ms)) {
		err = -errno;
		pr_err("signalfd/timerfd: %s", strerror(errno));
		goto out;
	}
	d->period_changed = false;	/* the settings' period: armed just now */
	pr_info("running in %s mode, period %u ms, control socket ready",
		mode_names[d->mode], d->period_ms);
	/*
	 * libbpf parsed the kernel's BTF, megabytes, for each object it
	 * loaded, and freed it.  Under glibc's dynamic mmap threshold, which
	 * rises to the largest mmap()ed chunk freed, which parse came from
	 * the heap and stayed in moatd's RSS depended on the order of the
	 * allocations: main() fixed it low for the start, so that they went
	 * back to the kernel.  From here on the largest chunks are a
	 * scrape's (a body of a MiB at 500 groups, which http.c builds in a
	 * mapping it keeps): kept in the heap between scrapes (the trim
	 * threshold), a scrape took 6.5 ms; mapped and unmapped each time,
	 * or trimmed after each, 17-22 ms.  moat's own parse of it, for
	 * the probes (bpf_probe.c), goes too where no load dropped it.
	 */
	moat_vmlinux_btf_drop();
	mallopt(M_MMAP_THRESHOLD, 4 << 20);
	mallopt(M_TRIM_THRESHOLD, 8 << 20);
	malloc_trim(0);
	watchdog = moat_sd_watchdog_usec();
	notify("READY=1\nSTATUS=%s mode, period %u ms", mode_names[d->mode],
	       d->period_ms);
	for (;;) {
		struct signalfd_siginfo si;
		unsigned int n = 2;
		int timeout = -1, ev = -1;
		__u64 ticks;

		pfd[0] = (struct pollfd){ .fd = tfd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		efd = groups_events_fd(d);
		if (efd >= 0) {
			ev = n;
			pfd[n++] = (struct pollfd){ .fd = efd, .events = POLLIN };
		}
		/*
		 * The socket's work before its fds: a connection accepted
		 * now is polled now, and its request answered when it
		 * arrives, not at the next period.
		 */
		server_work(srv, d, &timeout);
		server_poll_fds(srv, pfd, &n, MAX_POLL);
		http_work(d);
		http_poll_fds(d, pfd, &n, MAX_POLL, &timeout);
		if (poll(pfd, n, timeout) < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
		if (read(sfd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGHUP) {
				notify("RELOADING=1\nMONOTONIC_USEC=%.0f", now_us());
				settings_reload(d);
				notify("READY=1\nSTATUS=%s mode, period %u ms",
				       mode_names[d->mode], d->period_ms);
				continue;
			}
			pr_info("signal %u: stopping", si.ssi_signo);
			notify("STOPPING=1\nSTATUS=stopping: putting back what moatd changed");
			break;
		}
		if (read(tfd, &ticks, sizeof(ticks)) == sizeof(ticks)) {
			settings_watch(d);	/* a ConfigMap's update */
			cycle(d);
			if (watchdog)
				notify("WATCHDOG=1");
		} else if (ev >= 0 && pfd[ev].revents & POLLIN)
			take_events(d);	/* a task to follow, promptly */
		http_work(d);
		moat_vmlinux_btf_drop();	/* a knob's reopen's probes */
		if (d->period_changed) {
			d->period_changed = false;
			rearm(d, tfd, &armed);
		}
	}
out:
	if (sfd >= 0)
		close(sfd);
	if (tfd >= 0)
		close(tfd);
	return err;
}

/*
 * The journal, before anything else: put back the values a moatd that
 * did not stop cleanly left (the directories it made are resctrl's to
 * remove, rdt.c, once it knows where resctrl is).
 */
static int open_journal(struct moatd *d)
{
	char file[PATH_MAX], legacy[PATH_MAX + 32];
	int err;

	file[0] = '\0';
	if (*d->state_dir &&
	    (size_t)snprintf(file, sizeof(file), "%s/journal", d->state_dir) >=
	    sizeof(file))
		return -ENAMETOOLONG;
	err = moat_journal_open(file, &d->journal);
	if (err == -EBADMSG) {
		/*
		 * Not a crash loop: the file stays as it is, for a person to
		 * read, and moatd runs in observe with a journal in memory
		 * that observe never fills, saying so in its log, /healthz,
		 * /metrics and the knob journal_unreadable.
		 */
		pr_err("journal %s: its originals cannot be trusted, so nothing was restored; moatd runs in observe only, enforce refused, until the values it lists are checked by hand and the file removed",
		       file);
		snprintf(d->journal_unreadable, sizeof(d->journal_unreadable), "%s", file);
		return moat_journal_open("", &d->journal);
	}
	if (err)
		return err;
	if (!*file)
		pr_warn("no state dir: the journal of original values is in memory only, and a crash would leave throttled values behind");
	if (d->journal->n) {
		pr_info("journal %s: %zu values from a moatd that did not stop cleanly: restoring",
			file, d->journal->n);
		moat_journal_restore_some(d->journal, "", MOAT_J_VALUES);
	}
	/* kernel.task_delayacct, from a moatd of before the one journal */
	snprintf(legacy, sizeof(legacy), "%s/taskstats.journal", d->state_dir);
	if (*d->state_dir && !access(legacy, F_OK)) {
		struct moat_journal *old;

		if (!moat_journal_open(legacy, &old)) {
			moat_journal_restore(old, "");
			moat_journal_free(old);
			unlink(legacy);
		}
	}
	return 0;
}

static void close_modules(struct moatd *d, int opened)
{
	int m;

	for (m = opened; m-- > 0;)
		if (moatd_modules[m]->close)
			moatd_modules[m]->close(d);
}

/*
 * --restore-only: what the journal lists goes back (open_journal() put
 * back its values; here the directories and mounts too), and moatd exits
 * without starting anything else: for a node whose moatd is gone (an
 * uninstall, a pod killed before it restored; deploy.rst shows it run
 * from the image with kubectl debug).
 * The state directory's lock keeps it off a running moatd's journal.
 */
static int restore_only(struct moatd *d)
{
	size_t i;

	if (d->journal_unreadable[0]) {
		pr_err("--restore-only: nothing restored: the journal %s does not decode",
		       d->journal_unreadable);
		return -EBADMSG;
	}
	if (!*d->state_dir) {
		pr_err("--restore-only: no state directory, so no journal to restore from");
		return -EINVAL;
	}
	moat_journal_restore(d->journal, "");
	for (i = 0; i < d->journal->n; i++)
		pr_err("--restore-only: not put back: %s (original '%s')",
		       d->journal->e[i].path, d->journal->e[i].orig);
	if (d->journal->stale)
		pr_err("--restore-only: the journal %s could not be saved: %s",
		       d->journal->file, strerror(-d->journal->save_err));
	if (d->journal->n || d->journal->stale)
		return -EIO;
	pr_info("--restore-only: the journal %s is empty: every value moatd changed is back",
		d->journal->file);
	return 0;
}

/*
 * --restore-only --stay: once the journal is empty, the state directory
 * is let go (a moatd installed again may start on it) and moatd waits
 * for SIGTERM or SIGINT: the main container of deploy/cleanup/'s
 * DaemonSet, in an image with no shell to wait in.
 */
static int stay(int lock)
{
	sigset_t set;
	int sig;

	if (lock >= 0)
		close(lock);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	if (sigprocmask(SIG_BLOCK, &set, NULL))
		return -errno;
	pr_info("--restore-only --stay: every value is back; waiting for SIGTERM");
	if (sigwait(&set, &sig))
		return -EINTR;
	pr_info("--restore-only --stay: %s: exiting", strsignal(sig));
	return 0;
}

int main(int argc, char **argv)
{
	struct server *srv = NULL;
	sigset_t mask;
	struct options o = {};
	char state_file[PATH_MAX + 16] = "";
	struct moatd *d;
	unsigned int mode = 0;
	int err = 0, lock, m, inited = 0;
	bool started;

	mallopt(M_MMAP_THRESHOLD, 128 * 1024);	/* see run(): until the start is done */

	/*
	 * Blocked before anything else: the control socket appears before
	 * run() reads them, and a SIGTERM or SIGHUP in between must wait
	 * for it, not kill moatd with its kernel values unrestored.
	 */
	stop_signals(&mask);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	moat_log_init("moatd", MOAT_LOG_INFO);
	moat_log_syslog_prefix(true);
	if (parse_args(argc, argv, &o))
		return 2;
	moat_log_init("moatd", o.verbose > 1 ? MOAT_LOG_TRACE :
			       o.verbose ? MOAT_LOG_DEBUG : MOAT_LOG_INFO);
	if (set_host_root(&o))
		return 1;
	raise_nofile();
	/* Before anything reads or writes the state directory. */
	lock = lock_state_dir(o.state_dir);
	if (lock < -1)
		return 1;
	d = calloc(1, sizeof(*d));
	if (!d)
		return 1;
	d->period_ms = 500;
	snprintf(d->state_dir, sizeof(d->state_dir), "%s", o.state_dir);
	if (strlen(o.state_dir) >= sizeof(d->state_dir)) {
		pr_err("--state-dir %s: path too long", o.state_dir);
		free(d);
		return 1;
	}
	err = open_journal(d);
	if (err) {
		free(d);
		return 1;
	}
	if (o.restore_only) {
		err = restore_only(d);
		moat_journal_free(d->journal);
		free(d);
		if (!err && o.stay)
			err = stay(lock);
		return err ? 1 : 0;
	}
	d->tree = moat_knob_tree_new();
	err = d->tree ? add_base_knobs(d) : -ENOMEM;
	for (m = 0; m < MOD_NR && !err; m++) {
		d->mod[m] = calloc(1, moatd_modules[m]->size ? moatd_modules[m]->size : 1);
		if (!d->mod[m])
			err = -ENOMEM;
		else if (moatd_modules[m]->init)
			err = moatd_modules[m]->init(d);
		inited += !err;
	}
	if (!err && o.mode) {
		for (mode = 0; mode_names[mode] && strcmp(mode_names[mode], o.mode); mode++)
			;
		if (!mode_names[mode]) {
			pr_err("--mode %s: expected observe, shadow or enforce", o.mode);
			err = -EINVAL;
		}
		if (!err)
			err = settings_cli(d, "mode", o.mode);
	}
	if (!err && o.listen)
		err = settings_cli(d, "http/listen", o.listen);
	if (*o.state_dir)
		snprintf(state_file, sizeof(state_file), "%s/moat.state", o.state_dir);
	if (!err)
		err = settings_configure(d, o.config, o.config_given, state_file);
	if (!err)
		err = setup_cgroups(d, &o);
	if (!err)
		err = settings_load(d);
	if (!err)
		err = check_privileges(d);
	for (m = 0; m < MOD_NR && !err; m++)
		if (moatd_modules[m]->open)
			err = moatd_modules[m]->open(d);
	if (!err)
		err = server_open(&srv, o.socket, o.socket_group);
	if (err)
		goto out;
	cycle(d);
	if (!o.foreground && daemon(0, 1)) {
		err = -errno;
		pr_err("detach: %s", strerror(errno));
		goto out;
	}
	if (lock >= 0)
		lock_owner(lock);	/* daemon() forked: another pid */
	/* After daemon(): a thread does not survive its fork. */
	for (m = 0; m < MOD_NR && !err; m++)
		if (moatd_modules[m]->start)
			err = moatd_modules[m]->start(d);
	d->started = true;
	if (!err)
		err = run(d, srv);
out:
	/*
	 * What moat changed in the kernel goes back first, before anything
	 * that may wait for the network (a DaemonSet's grace period ends in
	 * SIGKILL).  Then every module's threads are asked to end, all of
	 * them at once, by one deadline: kube/stop_timeout_s for the Node's
	 * hints to be withdrawn.  Then every module that was set up closes,
	 * opened or not (a close does nothing where there is nothing), and
	 * joins its threads.
	 */
	server_close(srv);
	moatd_restore(d, "moatd stops");
	if (enforce_report_stale(d) && !err)
		err = -EIO;
	started = d->started;
	d->stop_by_ns = (long long)(moatd_mono_s() * 1e9) +
			d->kube_stop_s * 1000000000LL;
	for (m = inited; m-- > 0;)
		if (moatd_modules[m]->stop)
			moatd_modules[m]->stop(d);
	close_modules(d, inited);
	for (m = 0; m < MOD_NR; m++)
		free(d->mod[m]);
	moat_knob_tree_free(d->tree);
	moat_journal_free(d->journal);
	free(d->by_cgid);
	free(d->period.gone);
	free(d->period.blame);
	free(d->period.units);
	free(d->plan.steps);
	free(d->plan.burst);
	free(d);
	/* what went wrong was said where it went wrong, with what and why */
	if (err && started)
		pr_err("stopped on error: %s", strerror(-err));
	else if (err)
		pr_err("not started: the reason is above");
	return err ? 1 : 0;
}
