// SPDX-License-Identifier: GPL-2.0-only
/*
 * moatd: finds the groups on this node, observes them every period, and
 * serves everything it knows and every tunable as one knob tree on its
 * control socket.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include "cgroup.h"
#include "ctl.h"
#include "log.h"
#include "moatd.h"

#define DEFAULT_CONFIG		"/etc/moat/moat.conf"
#define DEFAULT_STATE_DIR	"/var/lib/moat"
/*
 * Loopback: /metrics and /hints name every pod and what moat does to it,
 * so a node serves them to the network only when told to (the DaemonSet
 * passes --listen with the pod's address).  9590: not taken in
 * Prometheus's list of default ports.
 */
#define DEFAULT_LISTEN		"127.0.0.1:9590"
#define MAX_POLL		32

struct options {
	const char *config, *cgroup_root, *state_dir, *socket, *socket_group;
	const char *mode, *listen;
	bool config_given, foreground;
	int verbose;
};

static const char *const mode_names[] = { "observe", "enforce", NULL };

static const char usage[] =
"usage: moatd [--config FILE] [--cgroup-root DIR] [--state-dir DIR] [--socket PATH]\n"
"             [--socket-group GROUP] [--mode observe|enforce] [--listen ADDR:PORT]\n"
"             [--foreground] [-v]\n"
"\n"
"  -c, --config FILE       knob settings, 'path = value' lines\n"
"                          (default " DEFAULT_CONFIG ", if it exists)\n"
"  -r, --cgroup-root DIR   look for groups only below this cgroup\n"
"                          (default: the cpu controller's whole hierarchy)\n"
"  -d, --state-dir DIR     keep what moatctl set changed in DIR/moat.state\n"
"                          (default " DEFAULT_STATE_DIR "; '' keeps nothing)\n"
"  -s, --socket PATH       control socket (default " MOAT_CTL_SOCKET ")\n"
"  -g, --socket-group GRP  let this group read the socket (mode 0660)\n"
"  -m, --mode MODE         observe or enforce; wins over the config\n"
"  -l, --listen ADDR:PORT  serve /metrics, /hints and /healthz over HTTP here;\n"
"                          wins over the config (default " DEFAULT_LISTEN ";\n"
"                          '' serves no HTTP)\n"
"  -f, --foreground        do not detach\n"
"  -v, --verbose           debug messages; twice: libbpf's too\n";

static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "cgroup-root", required_argument, NULL, 'r' },
		{ "state-dir", required_argument, NULL, 'd' },
		{ "socket", required_argument, NULL, 's' },
		{ "socket-group", required_argument, NULL, 'g' },
		{ "mode", required_argument, NULL, 'm' },
		{ "listen", required_argument, NULL, 'l' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	int c;

	o->config = DEFAULT_CONFIG;
	o->state_dir = DEFAULT_STATE_DIR;
	o->socket = MOAT_CTL_SOCKET;
	while ((c = getopt_long(argc, argv, "c:r:d:s:g:m:l:fvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			o->config = optarg;
			o->config_given = true;
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
	return 0;
}

const char *moatd_version(void)
{
	return MOAT_VERSION;
}

double moatd_since_cycle_us(const struct moatd *d)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - d->last_cycle.tv_sec) * 1e6 +
	       (now.tv_nsec - d->last_cycle.tv_nsec) / 1e3;
}

int moatd_set(struct moatd *d, const char *path, const char *val)
{
	const char *name = path + strlen("rules/");
	bool rule = !strncmp(path, "rules/", 6) && !strchr(name, '/');
	bool created = false;
	int err;

	if (rule && !moat_knob_find(d->tree, path)) {
		if (!*val)
			return -ENOENT;
		err = rules_create(d, name);
		if (err)
			return err == -E2BIG ? -E2BIG : -ENOENT;
		created = true;
	}
	err = moat_knob_set(d->tree, path, val);
	if (rule && ((err && created) || (!err && !*val)))
		rules_remove(d, name);
	if (!err)
		pr_info("knob %s set to '%s'", path, val);
	/* a rule classifies at once: rescan now, not in rescan_ms */
	if (!err && rule)
		d->cgroups_changed = true;
	return err;
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

/* Leaving enforce mode puts back everything enforcement changed. */
static void store_mode(const struct moat_knob *k, unsigned int u,
		       const char *val)
{
	struct moatd *d = k->owner;

	if (d->mode == MOATD_ENFORCE && u != MOATD_ENFORCE)
		enforce_restore_all(d, "mode observe");
	d->blame_valid = false;
	d->mode = u;
}

static int show_cycle_us(const struct moat_knob *k, char *buf, size_t len)
{
	const struct moatd *d = k->owner;

	return snprintf(buf, len, "%.0f", d->cycle_us) >= (int)len ? -EOVERFLOW : 0;
}

static int add_base_knobs(struct moatd *d)
{
	const struct moat_knob knobs[] = {
		{ .path = "version", .type = MOAT_KNOB_SHOW, .show = show_version },
		{ .path = "mode", .type = MOAT_KNOB_CHOICE, .writable = true,
		  .choices = mode_names, .data = &d->mode, .store = store_mode },
		{ .path = "period_ms", .type = MOAT_KNOB_U32, .writable = true,
		  .min = 50, .max = 60000, .data = &d->period_ms,
		  .store = store_period },
		{ .path = "cycle_us", .type = MOAT_KNOB_SHOW, .show = show_cycle_us },
		{ .path = "rescan_ms", .type = MOAT_KNOB_U32, .writable = true,
		  .min = 1000, .max = 3600000, .data = &d->rescan_ms },
		{ .path = "classes/guaranteed", .type = MOAT_KNOB_CHOICE,
		  .writable = true, .choices = moat_class_names,
		  .data = &d->qos.guaranteed },
		{ .path = "classes/burstable", .type = MOAT_KNOB_CHOICE,
		  .writable = true, .choices = moat_class_names,
		  .data = &d->qos.burstable },
		{ .path = "classes/besteffort", .type = MOAT_KNOB_CHOICE,
		  .writable = true, .choices = moat_class_names,
		  .data = &d->qos.besteffort },
	};
	int err;

	err = moat_knob_add_all(d->tree, "", knobs,
				sizeof(knobs) / sizeof(knobs[0]), d);
	/* there, if empty: ls rules says no rules, not no such knob */
	if (!err)
		err = moat_knob_add_dir(d->tree, "rules");
	if (!err)
		err = moat_knob_add_dir(d->tree, "groups");
	if (!err)
		err = enforce_add_knobs(d);
	if (!err)
		err = http_add_knobs(d);
	if (!err)
		err = kube_add_knobs(d);
	if (!err)
		err = cpi_add_knobs(d);
	if (!err)
		err = delay_add_knobs(d);
	if (!err)
		err = rdt_add_knobs(d);
	return err ? err : node_add_knobs(d);
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
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static double ms_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t->tv_sec) * 1e3 + (now.tv_nsec - t->tv_nsec) / 1e6;
}

static void note_removed(__u64 id, void *ctx)
{
	struct moatd *d = ctx;

	if (d->gone.n < sizeof(d->gone.ids) / sizeof(d->gone.ids[0]))
		d->gone.ids[d->gone.n++] = id;
	else
		d->gone.overflow = true;
}

static void note_task(__u64 unit, __u32 tid, void *ctx)
{
	rdt_task_event(ctx, unit, tid);
}

/* Take the cgroup events in; the tasks among them go to resctrl at once. */
static void take_events(struct moatd *d)
{
	if (d->events && moat_cgroup_events_consume(d->events, note_removed,
						    note_task, d))
		d->cgroups_changed = true;
	rdt_flush(d);
}

/*
 * Walking the hierarchy is most of a period's work, so it is done when a
 * cgroup event says something changed, and every rescan_ms in case an
 * event was missed; without the events, every period.
 */
static void cycle(struct moatd *d)
{
	double start = now_us();
	int err;

	take_events(d);
	/* Removed cgroups leave the rqlat maps at once, not when they fill. */
	if (d->gone.n && d->rqlat)
		moat_rqlat_forget(d->rqlat, d->gone.ids, d->gone.n);
	if (d->gone.overflow)
		pr_debug("more than %zu cgroups removed in a period: some stay in the rqlat maps",
			 sizeof(d->gone.ids) / sizeof(d->gone.ids[0]));
	d->gone.n = 0;
	d->gone.overflow = false;

	if (!d->events || d->cgroups_changed || !d->last_rescan.tv_sec ||
	    ms_since(&d->last_rescan) >= d->rescan_ms) {
		d->cgroups_changed = false;
		clock_gettime(CLOCK_MONOTONIC, &d->last_rescan);
		err = groups_rescan(d);
		if (err)
			pr_warn("rescan of %s: %s", d->scan.mnt, strerror(-err));
	}
	node_observe(d);
	groups_observe(d);
	if (enforce_find_units(d))
		pr_warn("out of memory: the groups' units are as they were");
	cpi_cycle(d);
	enforce_cycle(d);
	rdt_cycle(d);
	kube_cycle(d);
	d->cycle_us = now_us() - start;
	clock_gettime(CLOCK_MONOTONIC, &d->last_cycle);
}

/* http/listen changed: serve on the new address, or keep the old. */
static void relisten(struct moatd *d)
{
	struct http *h;

	d->listen_changed = false;
	if (!http_open(&h, d, d->listen) || !*d->listen) {
		http_close(d->http);
		d->http = h;
		if (!*d->listen)
			pr_info("http: no longer served");
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

static int run(struct moatd *d, struct server *srv)
{
	struct pollfd pfd[MAX_POLL];
	sigset_t mask;
	int tfd, sfd, err = 0;

	stop_signals(&mask);	/* blocked since main() began */
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (sfd < 0 || tfd < 0 || arm_timer(tfd, d->period_ms)) {
		err = -errno;
		pr_err("signalfd/timerfd: %s", strerror(errno));
		goto out;
	}
	pr_info("running in %s mode, period %u ms, control socket ready",
		mode_names[d->mode], d->period_ms);
	for (;;) {
		struct signalfd_siginfo si;
		unsigned int n = 2;
		int timeout = -1;
		__u64 ticks;

		pfd[0] = (struct pollfd){ .fd = tfd, .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		if (d->events)
			pfd[n++] = (struct pollfd){
				.fd = moat_cgroup_events_fd(d->events),
				.events = POLLIN };
		/*
		 * The socket's work before its fds: a connection accepted
		 * now is polled now, and its request answered when it
		 * arrives, not at the next period.
		 */
		server_work(srv, d, &timeout);
		server_poll_fds(srv, pfd, &n, MAX_POLL);
		if (d->listen_changed)
			relisten(d);
		http_poll_fd(d->http, pfd, &n, MAX_POLL, &timeout);
		if (poll(pfd, n, timeout) < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
		if (read(sfd, &si, sizeof(si)) == sizeof(si)) {
			if (si.ssi_signo == SIGHUP) {
				settings_reload(d);
				continue;
			}
			pr_info("signal %u: stopping", si.ssi_signo);
			break;
		}
		if (read(tfd, &ticks, sizeof(ticks)) == sizeof(ticks))
			cycle(d);
		else if (d->events && pfd[2].revents & POLLIN)
			take_events(d);	/* a task to follow, promptly */
		http_work(d->http);
		if (d->period_changed) {
			d->period_changed = false;
			arm_timer(tfd, d->period_ms);
		}
	}
out:
	if (sfd >= 0)
		close(sfd);
	if (tfd >= 0)
		close(tfd);
	return err;
}

int main(int argc, char **argv)
{
	struct moat_rqlat_opts ropts = {};
	struct server *srv = NULL;
	sigset_t mask;
	struct options o = {};
	struct moatd *d;
	unsigned int mode = 0;
	int err, lock;

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
	if (geteuid()) {
		pr_err("must run as root: it loads BPF programs and reads every cgroup");
		return 1;
	}
	/* Before anything reads or writes the state directory. */
	lock = lock_state_dir(o.state_dir);
	if (lock < -1)
		return 1;
	d = calloc(1, sizeof(*d));
	if (!d)
		return 1;
	d->period_ms = 500;
	snprintf(d->listen, sizeof(d->listen), "%s", DEFAULT_LISTEN);
	/* koordlet's default reclaim thresholds are 65% of CPU and memory */
	d->hint_cpu_margin_pct = 35;
	d->hint_memory_margin_pct = 35;
	d->rescan_ms = 10000;
	d->qos = (struct moat_qos_classes){ MOAT_CLASS_LC, MOAT_CLASS_LC,
					    MOAT_CLASS_BE };
	/* Before anything else: put back what a crashed moatd left. */
	err = enforce_open(d, o.state_dir);
	if (err) {
		free(d);
		return 1;
	}
	d->tree = moat_knob_tree_new();
	err = d->tree ? add_base_knobs(d) : -ENOMEM;
	if (!err && o.mode) {
		for (mode = 0; mode_names[mode] && strcmp(mode_names[mode], o.mode); mode++)
			;
		if (!mode_names[mode]) {
			pr_err("--mode %s: expected observe or enforce", o.mode);
			err = -EINVAL;
		}
		if (!err)
			err = settings_cli(d, "mode", o.mode);
	}
	if (!err && o.listen)
		err = settings_cli(d, "http/listen", o.listen);
	d->config_path = o.config;
	d->config_given = o.config_given;
	if (!err && *o.state_dir &&
	    (size_t)snprintf(d->state_path, sizeof(d->state_path), "%s/moat.state",
			     o.state_dir) >= sizeof(d->state_path)) {
		pr_err("--state-dir %s: path too long", o.state_dir);
		err = -ENAMETOOLONG;
	}
	if (!err)
		err = setup_cgroups(d, &o);
	if (!err)
		err = settings_load(d);
	if (!err)
		err = settings_read_state(d);
	if (err)
		goto out;

	err = delay_open(d, &ropts, o.state_dir, o.verbose);
	if (err)
		goto out;
	moat_cgroup_events_open(&d->events);	/* optional: says why not */
	cpi_open(d);				/* optional: says which events */
	rdt_open(d, o.state_dir);		/* optional: says what there is */
	err = server_open(&srv, o.socket, o.socket_group);
	if (!err)
		err = http_open(&d->http, d, d->listen);
	d->listen_changed = false;
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
	err = kube_open(d);
	d->started = true;
	if (!err)
		err = run(d, srv);
out:
	kube_close(d);
	http_close(d->http);
	server_close(srv);
	enforce_restore_all(d, "moatd stops");
	if (enforce_report_stale(d) && !err)
		err = -EIO;
	rdt_close(d);
	groups_free(d);
	enforce_close(d);
	cpi_close(d);
	moat_cgroup_events_close(d->events);
	delay_close(d);
	moat_knob_tree_free(d->tree);
	settings_free(d);
	free(d);
	if (err)
		pr_err("not started or stopped on error: %s", strerror(-err));
	return err ? 1 : 0;
}
