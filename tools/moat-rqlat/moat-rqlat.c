// SPDX-License-Identifier: GPL-2.0-only
/*
 * moat-rqlat: run-queue latency per cgroup, and who caused it.
 *
 * In the spirit of bcc's runqlat, but per cgroup (the cgroup that owns
 * the task's cpu controller) and with blame: for each watched cgroup, the
 * cgroups that held the CPU while its tasks waited.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <json-c/json.h>
#include "caps.h"
#include "cgroup.h"
#include "hist.h"
#include "log.h"
#include "mountinfo.h"
#include "rqlat_bpf.h"

#define MAX_ARGS	64
#define TEXT_CULPRITS	5

struct cgroup_arg {
	const char *arg;
	char path[PATH_MAX];
	__u64 id;
};

struct options {
	double duration;	/* 0: until SIGINT/SIGTERM */
	double interval;	/* 0: one report at the end */
	struct cgroup_arg cgroups[MAX_ARGS], watch[MAX_ARGS];
	unsigned int nr_cgroups, nr_watch;
	bool histogram, json, raw_tp;
	int verbose;
};

struct hist_entry {
	__u64 id;
	struct moat_rqlat_hist h;
};

struct blame_entry {
	struct moat_blame_key k;
	struct moat_blame_val v;
};

/* A growable array of fixed-size records. */
struct vec {
	void *v;
	size_t nr, cap, size;
};

/* Everything one report needs, and the previous snapshot for deltas. */
struct state {
	const struct options *opts;
	struct moat_rqlat *rqlat;
	struct moat_cgroup_names *names;
	struct vec hists, prev_hists;	/* struct hist_entry, by id */
	struct vec blame, prev_blame;	/* struct blame_entry, by key */
	double window_s;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	stop = 1;
}

static const char usage[] =
"usage: moat-rqlat [-d SECONDS] [-i INTERVAL] [--cgroup PATH]... [--watch PATH]...\n"
"                  [-H] [--json] [--raw-tp] [-v]\n"
"\n"
"Run-queue latency per cgroup (the cgroup of the cpu controller), and for\n"
"watched cgroups the cgroups that held the CPU while their tasks waited.\n"
"\n"
"  -d, --duration SECONDS  stop after SECONDS (default: at Ctrl-C)\n"
"  -i, --interval SECONDS  report every SECONDS, at least 0.01 (default:\n"
"                          once, at the end)\n"
"  -c, --cgroup PATH       report only this cgroup (repeatable)\n"
"  -w, --watch PATH        charge this cgroup's waits to culprits (repeatable)\n"
"  -H, --histogram         print each cgroup's wait histogram\n"
"  -j, --json              one JSON document per report\n"
"      --raw-tp            attach raw_tp programs even where tp_btf works\n"
"  -v, --verbose           on a failed BPF load, the verifier's last lines;\n"
"                          twice: all of libbpf's output\n"
"  -h, --help              this text\n"
"\n"
"PATH is a cgroup in the cpu controller's hierarchy, as /proc/PID/cgroup\n"
"names it (/a/b) or as a directory under its mount point.\n";

static void *vec_push(struct vec *v)
{
	if (v->nr == v->cap) {
		size_t cap = v->cap ? v->cap * 2 : 64;
		void *n = realloc(v->v, cap * v->size);

		if (!n)
			return NULL;
		v->v = n;
		v->cap = cap;
	}
	return (char *)v->v + v->size * v->nr++;
}

static void vec_swap(struct vec *a, struct vec *b)
{
	struct vec t = *a;

	*a = *b;
	*b = t;
}

static int cmp_hist_id(const void *a, const void *b)
{
	const struct hist_entry *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int cmp_blame_key(const void *a, const void *b)
{
	const struct blame_entry *x = a, *y = b;

	if (x->k.victim != y->k.victim)
		return x->k.victim < y->k.victim ? -1 : 1;
	return x->k.culprit < y->k.culprit ? -1 : x->k.culprit > y->k.culprit;
}

/*
 * The shortest report interval: each report walks every map, which takes
 * milliseconds with thousands of cgroups; shorter is a busy loop.
 */
#define MIN_INTERVAL	0.01

/* @s as seconds into *@out: positive and at least @min. */
static int parse_seconds(const char *opt, const char *s, double min, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(*out) || *out <= 0) {
		pr_err("%s: '%s' is not a positive number of seconds", opt, s);
		return -EINVAL;
	}
	if (*out < min) {
		pr_err("%s: %s s is too short: at least %g s", opt, s, min);
		return -EINVAL;
	}
	return 0;
}

static int add_cgroup_arg(struct cgroup_arg *v, unsigned int *nr,
			  const char *opt, const char *arg)
{
	if (*nr == MAX_ARGS) {
		pr_err("%s: at most %d cgroups", opt, MAX_ARGS);
		return -E2BIG;
	}
	if (!*arg) {
		pr_err("%s: '' is not a cgroup (the root is '/')", opt);
		return -EINVAL;
	}
	v[(*nr)++].arg = arg;
	return 0;
}

static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "duration", required_argument, NULL, 'd' },
		{ "interval", required_argument, NULL, 'i' },
		{ "cgroup", required_argument, NULL, 'c' },
		{ "watch", required_argument, NULL, 'w' },
		{ "histogram", no_argument, NULL, 'H' },
		{ "json", no_argument, NULL, 'j' },
		{ "raw-tp", no_argument, NULL, 'R' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	int c, err = 0;

	while (!err && (c = getopt_long(argc, argv, "d:i:c:w:Hjvh", longopts,
					NULL)) != -1) {
		switch (c) {
		case 'd':
			err = parse_seconds("-d", optarg, 0, &o->duration);
			break;
		case 'i':
			err = parse_seconds("-i", optarg, MIN_INTERVAL, &o->interval);
			break;
		case 'c':
			err = add_cgroup_arg(o->cgroups, &o->nr_cgroups,
					     "--cgroup", optarg);
			break;
		case 'w':
			err = add_cgroup_arg(o->watch, &o->nr_watch, "--watch",
					     optarg);
			break;
		case 'H':
			o->histogram = true;
			break;
		case 'j':
			o->json = true;
			break;
		case 'R':
			o->raw_tp = true;
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
	if (!err && optind < argc) {
		pr_err("unexpected argument '%s'", argv[optind]);
		err = -EINVAL;
	}
	return err;
}

static int resolve_args(const struct moat_cg_hierarchy *h,
			struct cgroup_arg *v, unsigned int nr, const char *opt)
{
	unsigned int i;
	int err;

	for (i = 0; i < nr; i++) {
		err = moat_cgroup_resolve(h, v[i].arg, v[i].path,
					  sizeof(v[i].path), &v[i].id);
		if (err == -ENOENT) {
			pr_err("%s %s: no such cgroup in the cpu hierarchy mounted at %s",
			       opt, v[i].arg, h->mnt);
			return err;
		}
		if (err) {
			pr_err("%s %s: %s", opt, v[i].arg, strerror(-err));
			return err;
		}
	}
	return 0;
}

static bool in_args(const struct cgroup_arg *v, unsigned int nr, __u64 id)
{
	unsigned int i;

	for (i = 0; i < nr; i++)
		if (v[i].id == id)
			return true;
	return false;
}

static int collect_hist(__u64 id, const struct moat_rqlat_hist *h, void *ctx)
{
	struct hist_entry *e = vec_push(ctx);

	if (!e)
		return -ENOMEM;
	e->id = id;
	e->h = *h;
	return 0;
}

static int collect_blame(const struct moat_blame_key *k,
			 const struct moat_blame_val *v, void *ctx)
{
	struct blame_entry *e = vec_push(ctx);

	if (!e)
		return -ENOMEM;
	e->k = *k;
	e->v = *v;
	return 0;
}

/* Read the maps; turn the totals in s->hists and s->blame into deltas. */
static int snapshot(struct state *s, struct vec *hist_win, struct vec *blame_win)
{
	size_t i;
	int err;

	s->hists.nr = s->blame.nr = 0;
	err = moat_rqlat_for_each_hist(s->rqlat, collect_hist, &s->hists);
	if (!err)
		err = moat_rqlat_for_each_blame(s->rqlat, collect_blame, &s->blame);
	if (err) {
		pr_err("read BPF maps: %s", strerror(-err));
		return err;
	}
	qsort(s->hists.v, s->hists.nr, sizeof(struct hist_entry), cmp_hist_id);
	qsort(s->blame.v, s->blame.nr, sizeof(struct blame_entry), cmp_blame_key);

	hist_win->nr = blame_win->nr = 0;
	for (i = 0; i < s->hists.nr; i++) {
		struct hist_entry *now = (struct hist_entry *)s->hists.v + i;
		struct hist_entry *before, *w = vec_push(hist_win);

		if (!w)
			return -ENOMEM;
		before = bsearch(now, s->prev_hists.v, s->prev_hists.nr,
				 sizeof(*now), cmp_hist_id);
		w->id = now->id;
		if (before)
			moat_hist_delta(&w->h, &now->h, &before->h);
		else
			w->h = now->h;
	}
	for (i = 0; i < s->blame.nr; i++) {
		struct blame_entry *now = (struct blame_entry *)s->blame.v + i;
		struct blame_entry *before, *w = vec_push(blame_win);

		if (!w)
			return -ENOMEM;
		before = bsearch(now, s->prev_blame.v, s->prev_blame.nr,
				 sizeof(*now), cmp_blame_key);
		*w = *now;
		if (before && now->v.count >= before->v.count) {
			w->v.count -= before->v.count;
			w->v.wait_ns -= before->v.wait_ns;
		}
	}
	vec_swap(&s->hists, &s->prev_hists);
	vec_swap(&s->blame, &s->prev_blame);
	return 0;
}

static bool wanted(const struct state *s, const struct hist_entry *e)
{
	const struct options *o = s->opts;

	if (in_args(o->watch, o->nr_watch, e->id))
		return true;
	if (o->nr_cgroups)
		return in_args(o->cgroups, o->nr_cgroups, e->id);
	return e->h.count > 0;
}

/* Most waited-for first: total wait, then id for a stable order. */
static int cmp_hist_sum(const void *a, const void *b)
{
	const struct hist_entry *x = a, *y = b;

	if (x->h.sum_ns != y->h.sum_ns)
		return x->h.sum_ns > y->h.sum_ns ? -1 : 1;
	return cmp_hist_id(a, b);
}

static int cmp_blame_wait(const void *a, const void *b)
{
	const struct blame_entry *x = a, *y = b;

	if (x->v.wait_ns != y->v.wait_ns)
		return x->v.wait_ns > y->v.wait_ns ? -1 : 1;
	return cmp_blame_key(a, b);
}

static const char *name_of(struct state *s, __u64 id)
{
	const char *p;

	if (id == MOAT_CULPRIT_IDLE)
		return "<idle>";
	if (id == MOAT_CULPRIT_LIMIT)
		return "<own limit>";
	p = moat_cgroup_names_lookup(s->names, id);
	return p ? p : "<removed>";
}

/* Keep the window's wanted cgroups, most waited-for first; name them. */
static void select_cgroups(struct state *s, struct vec *win)
{
	struct hist_entry *v = win->v;
	size_t i, n = 0;
	bool unknown = false;

	for (i = 0; i < win->nr; i++)
		if (wanted(s, &v[i]))
			v[n++] = v[i];
	win->nr = n;
	qsort(v, n, sizeof(*v), cmp_hist_sum);

	/* Walk the hierarchy again only when a cgroup is new to us. */
	for (i = 0; i < n && !unknown; i++)
		unknown = !moat_cgroup_names_lookup(s->names, v[i].id);
	if (unknown)
		moat_cgroup_names_refresh(s->names);
}

/* The culprits of @victim in this window, most wait first, in @out. */
static void culprits_of(const struct vec *blame_win, __u64 victim,
			struct vec *out)
{
	const struct blame_entry *b = blame_win->v;
	size_t i;

	out->nr = 0;
	for (i = 0; i < blame_win->nr; i++) {
		struct blame_entry *e;

		if (b[i].k.victim != victim || !b[i].v.count)
			continue;
		e = vec_push(out);
		if (e)
			*e = b[i];
	}
	qsort(out->v, out->nr, sizeof(struct blame_entry), cmp_blame_wait);
}

static double pctl_us(const struct moat_rqlat_hist *h, double q)
{
	double ns;

	return moat_hist_percentile(h, q, &ns) ? NAN : ns / 1000.0;
}

static void print_text_hist(const struct moat_rqlat_hist *h)
{
	int first = -1, last = -1, i, j;
	__u64 max = 0;

	for (i = 0; i < MOAT_HIST_SLOTS; i++) {
		if (!h->slots[i])
			continue;
		if (first < 0)
			first = i;
		last = i;
		if (h->slots[i] > max)
			max = h->slots[i];
	}
	if (first < 0)
		return;
	printf("%24s : %-10s distribution\n", "nsecs", "count");
	for (i = first; i <= last; i++) {
		double lo, hi;
		int stars = (int)(h->slots[i] * 40 / max);

		moat_hist_slot_bounds(i, &lo, &hi);
		printf("%11.0f -> %-10.0f : %-10llu |", lo,
		       i == MOAT_HIST_SLOTS - 1 ? INFINITY : hi - 1,
		       (unsigned long long)h->slots[i]);
		for (j = 0; j < 40; j++)
			putchar(j < stars ? '*' : ' ');
		puts("|");
	}
}

static void print_text(struct state *s, const struct vec *win,
		       const struct vec *blame_win)
{
	const struct hist_entry *v = win->v;
	struct vec culprits = { .size = sizeof(struct blame_entry) };
	char stamp[32];
	time_t now = time(NULL);
	size_t i, j;

	strftime(stamp, sizeof(stamp), "%H:%M:%S", localtime(&now));
	printf("%s  run-queue latency per cgroup, last %.1f s\n", stamp,
	       s->window_s);
	printf("%-40s %10s %10s %10s %10s\n", "CGROUP", "COUNT", "P50_US",
	       "P99_US", "P99.9_US");
	for (i = 0; i < win->nr; i++) {
		const struct blame_entry *c;

		printf("%-40s %10llu %10.1f %10.1f %10.1f\n",
		       name_of(s, v[i].id), (unsigned long long)v[i].h.count,
		       pctl_us(&v[i].h, 0.5), pctl_us(&v[i].h, 0.99),
		       pctl_us(&v[i].h, 0.999));
		if (s->opts->histogram)
			print_text_hist(&v[i].h);
		if (!in_args(s->opts->watch, s->opts->nr_watch, v[i].id))
			continue;
		culprits_of(blame_win, v[i].id, &culprits);
		c = culprits.v;
		for (j = 0; j < culprits.nr && j < TEXT_CULPRITS; j++)
			printf("    culprit %-30s %10.1f us %6.1f%% %8llu waits\n",
			       name_of(s, c[j].k.culprit), c[j].v.wait_ns / 1e3,
			       v[i].h.sum_ns ? 100.0 * c[j].v.wait_ns / v[i].h.sum_ns : 0,
			       (unsigned long long)c[j].v.count);
	}
	putchar('\n');
	free(culprits.v);
}

static json_object *json_us(double us)
{
	return isnan(us) ? NULL : json_object_new_double(us);
}

static json_object *json_cgroup(struct state *s, const struct hist_entry *e,
				const struct vec *blame_win, struct vec *culprits)
{
	json_object *o = json_object_new_object(), *arr;
	const struct blame_entry *c;
	size_t i;

	json_object_object_add(o, "path", json_object_new_string(name_of(s, e->id)));
	json_object_object_add(o, "id", json_object_new_uint64(e->id));
	json_object_object_add(o, "count", json_object_new_uint64(e->h.count));
	json_object_object_add(o, "sum_us", json_object_new_double(e->h.sum_ns / 1e3));
	json_object_object_add(o, "p50_us", json_us(pctl_us(&e->h, 0.5)));
	json_object_object_add(o, "p99_us", json_us(pctl_us(&e->h, 0.99)));
	json_object_object_add(o, "p999_us", json_us(pctl_us(&e->h, 0.999)));
	if (s->opts->histogram) {
		/* histogram[i] counts waits in [2^i, 2^(i+1)) ns */
		arr = json_object_new_array();
		for (i = 0; i < MOAT_HIST_SLOTS; i++)
			json_object_array_add(arr, json_object_new_uint64(e->h.slots[i]));
		json_object_object_add(o, "histogram_log2_ns", arr);
	}
	if (!in_args(s->opts->watch, s->opts->nr_watch, e->id))
		return o;

	culprits_of(blame_win, e->id, culprits);
	c = culprits->v;
	arr = json_object_new_array();
	for (i = 0; i < culprits->nr; i++) {
		json_object *j = json_object_new_object();

		json_object_object_add(j, "path", json_object_new_string(name_of(s, c[i].k.culprit)));
		json_object_object_add(j, "id", json_object_new_uint64(c[i].k.culprit));
		json_object_object_add(j, "wait_us", json_object_new_double(c[i].v.wait_ns / 1e3));
		json_object_object_add(j, "count", json_object_new_uint64(c[i].v.count));
		json_object_array_add(arr, j);
	}
	json_object_object_add(o, "culprits", arr);
	return o;
}

static void print_json(struct state *s, const struct vec *win,
		       const struct vec *blame_win)
{
	struct vec culprits = { .size = sizeof(struct blame_entry) };
	json_object *doc = json_object_new_object(), *arr, *drops;
	const struct hist_entry *v = win->v;
	__u64 d[MOAT_DROP_NR];
	char stamp[32];
	time_t now = time(NULL);
	size_t i;

	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	json_object_object_add(doc, "time", json_object_new_string(stamp));
	json_object_object_add(doc, "window_s", json_object_new_double(s->window_s));
	json_object_object_add(doc, "attach", json_object_new_string(moat_rqlat_attach_kind(s->rqlat)));
	arr = json_object_new_array();
	for (i = 0; i < win->nr; i++)
		json_object_array_add(arr, json_cgroup(s, &v[i], blame_win, &culprits));
	json_object_object_add(doc, "cgroups", arr);

	moat_rqlat_drops(s->rqlat, d);
	drops = json_object_new_object();
	for (i = 0; i < MOAT_DROP_NR; i++)
		json_object_object_add(drops, moat_rqlat_drop_name(i),
				       json_object_new_uint64(d[i]));
	json_object_object_add(doc, "drops", drops);

	puts(json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN |
					    JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(doc);
	free(culprits.v);
}

static int report(struct state *s)
{
	struct vec win = { .size = sizeof(struct hist_entry) };
	struct vec blame_win = { .size = sizeof(struct blame_entry) };
	__u64 d[MOAT_DROP_NR];
	int err, i;

	err = snapshot(s, &win, &blame_win);
	if (!err) {
		select_cgroups(s, &win);
		if (s->opts->json) {
			print_json(s, &win, &blame_win);
		} else {
			print_text(s, &win, &blame_win);
			moat_rqlat_drops(s->rqlat, d);
			for (i = 0; i < MOAT_DROP_NR; i++)
				if (d[i])
					pr_warn("%llu events dropped since start: %s",
						(unsigned long long)d[i],
						moat_rqlat_drop_name(i));
		}
		fflush(stdout);
	}
	free(win.v);
	free(blame_win.v);
	return err;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Sleep towards @t (monotonic seconds, may be infinite), a second at most,
 * or until a signal: the caller checks the time and the stop flag again.
 */
static void sleep_until(double t)
{
	double left = fmin(t - now_s(), 1.0);
	struct timespec ts;

	if (left <= 0)
		return;
	ts.tv_sec = (time_t)left;
	ts.tv_nsec = (long)((left - ts.tv_sec) * 1e9);
	nanosleep(&ts, NULL);
}

static int run(struct state *s)
{
	const struct options *o = s->opts;
	double start = now_s(), last = start, end, next;
	int err = 0;

	end = o->duration ? start + o->duration : INFINITY;
	if (!o->json)
		fprintf(stderr, "Tracing run-queue latency%s... Hit Ctrl-C to end.\n",
			o->nr_watch ? " and its culprits" : "");
	while (!stop && !err) {
		next = o->interval ? last + o->interval : end;
		sleep_until(next < end ? next : end);
		if (!stop && now_s() < next && now_s() < end)
			continue;
		s->window_s = now_s() - last;
		last = now_s();
		if (o->interval || stop || last >= end)
			err = report(s);
		if (last >= end)
			break;
	}
	return err;
}

int main(int argc, char **argv)
{
	struct moat_rqlat_opts ropts = {};
	struct options o = {};
	struct state s = {
		.opts = &o,
		.hists = { .size = sizeof(struct hist_entry) },
		.prev_hists = { .size = sizeof(struct hist_entry) },
		.blame = { .size = sizeof(struct blame_entry) },
		.prev_blame = { .size = sizeof(struct blame_entry) },
	};
	const struct moat_cg_hierarchy *cpu;
	struct moat_cg_layout layout;
	struct sigaction sa = { .sa_handler = on_signal };
	unsigned int i;
	int err;

	moat_log_init("moat-rqlat", MOAT_LOG_INFO);
	if (parse_args(argc, argv, &o))
		return 2;
	moat_log_init("moat-rqlat", o.verbose > 1 ? MOAT_LOG_TRACE :
				    o.verbose ? MOAT_LOG_DEBUG : MOAT_LOG_INFO);
	json_c_set_serialization_double_format("%.3f", JSON_C_OPTION_GLOBAL);

	/* any uid: the capabilities are what loading the programs needs */
	if (!(moat_cap_effective(CAP_BPF) && moat_cap_effective(CAP_PERFMON)) &&
	    !moat_cap_effective(CAP_SYS_ADMIN)) {
		pr_err("loading the BPF programs needs CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN); euid %u has neither",
		       geteuid());
		return 1;
	}
	if (moat_cg_layout_read(&layout))
		return 1;
	cpu = moat_cg_layout_find(&layout, "cpu");
	if (!cpu) {
		pr_err("no cgroup hierarchy has the cpu controller (mode %s)",
		       moat_cg_mode_name(layout.mode));
		return 1;
	}
	pr_debug("cgroups: %s mode, cpu controller on %s at %s",
		 moat_cg_mode_name(layout.mode), cpu->v2 ? "cgroup2" : "cgroup v1",
		 cpu->mnt);
	if (resolve_args(cpu, o.cgroups, o.nr_cgroups, "--cgroup") ||
	    resolve_args(cpu, o.watch, o.nr_watch, "--watch"))
		return 1;

	s.names = moat_cgroup_names_new(cpu);
	if (!s.names || moat_cgroup_names_refresh(s.names)) {
		pr_err("cgroup hierarchy %s: cannot list its cgroups", cpu->mnt);
		err = -ENOMEM;
		goto out;
	}

	ropts.force_raw_tp = o.raw_tp;
	err = moat_rqlat_open(&ropts, &s.rqlat);
	if (err) {
		if (o.verbose)
			moat_log_libbpf_tail();
		else if (err != -EOPNOTSUPP)
			pr_err("run with -v for the verifier's last lines");
		goto out;
	}
	for (i = 0; i < o.nr_watch; i++) {
		err = moat_rqlat_watch(s.rqlat, o.watch[i].id, true);
		if (err) {
			pr_err("--watch %s: add to watched map: %s",
			       o.watch[i].path, strerror(-err));
			goto out;
		}
	}

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	err = run(&s);
out:
	moat_rqlat_close(s.rqlat);
	moat_cgroup_names_free(s.names);
	free(s.hists.v);
	free(s.prev_hists.v);
	free(s.blame.v);
	free(s.prev_blame.v);
	return err ? 1 : 0;
}
