/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOATD_H
#define MOATD_H

#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <sys/socket.h>
#include <time.h>
#include <stdbool.h>
#include <linux/types.h>
#include "config.h"
#include "group.h"
#include "knob.h"
#include "mountinfo.h"
#include "cgroup_events_bpf.h"
#include "control.h"
#include "journal.h"
#include "rqlat_bpf.h"
#include "cpi2.h"
#include "pmu_bpf.h"
#include "taskstats.h"
#include "resctrl.h"

#define MOATD_MAX_RULES		64
#define MOAT_VERSION		"0.1.0"

enum moatd_mode { MOATD_OBSERVE, MOATD_ENFORCE };

/* One window of a group's signals; NAN where not known. */
struct group_window {
	__u64 rqlat_count;
	double rqlat_p50_us, rqlat_p99_us, rqlat_p999_us;
	double rqlat_wp99_us;		/* time-weighted: what requests see */
	double cpu_usage;		/* CPUs */
	double throttled_periods;	/* CFS periods throttled */
	double throttled_ms;
	double cpu_pressure_pct;	/* share of the window some task stalled */
	double memory_pressure_pct;
	double memory_bytes;		/* at the window's end */
	double cpi, llc_mpki;		/* cpi.c: counters over the window */
};

#define GROUP_HISTORY	16

/* The cgroup files a group is observed through, kept open. */
enum group_file {
	GF_CPU_STAT,		/* v2: usage and throttling; v1: throttling */
	GF_CPUACCT_USAGE,	/* v1 */
	GF_CPU_PRESSURE,	/* v2 */
	GF_MEMORY_PRESSURE,	/* v2 */
	GF_MEMORY_USAGE,	/* v2 memory.current, v1 memory.usage_in_bytes */
	GF_NR,
};

/* Cumulative counters at the last window's end. */
struct group_counters {
	struct moat_rqlat_hist rqlat;
	__u64 cpu_ns, nr_throttled, throttled_ns;
	__u64 cpu_some_us, memory_some_us;
	bool valid;		/* false before the first read */
};

/* resctrl monitoring of one group (rdt.c); NAN or < 0: not known. */
struct rdt_mon {
	double total, local;		/* mbm_*_bytes at the window's start */
	struct timespec at;
	bool valid;
	double llc_bytes, total_bps, local_bps;
};

struct moatd;

struct moatd_group {
	struct moatd *d;
	struct moat_group_id gid;	/* id, kind, default class, source */
	char path[PATH_MAX];		/* in the cpu controller's hierarchy */
	char dir[PATH_MAX];
	__u64 cgid;
	unsigned int class;		/* effective enum moat_class */
	bool seen;			/* in the latest rescan */
	bool watched;			/* in rqlat's watched map */

	int fd[GF_NR];			/* -1: not available */
	struct group_counters last;
	struct group_window win;
	struct moat_rqlat_hist win_hist;	/* the window's waits */
	struct group_window history[GROUP_HISTORY];	/* a ring, newest at */
	unsigned int history_next;			/* history_next - 1 */

	/* enforce.c */
	struct moatd_group *unit;	/* the outermost group it is in: the
					   pod of a container, else itself */
	int ctl_idx;			/* its row or column this period */
	unsigned int rqlat_p99_target_us;	/* 0: the class's */
	struct moat_ctl_limit lim[MOAT_RES_NR];
	unsigned long long throttles;	/* steps down taken */
	struct moat_ts_group ts;	/* delay.c: its threads' delays */
	/* cpi.c */
	__u64 pmu_last[MOAT_PMU_EVENTS];	/* cumulative, at the last read */
	bool pmu_valid;
	double win_pmu[MOAT_PMU_EVENTS];	/* growth over the window */
	double agg[MOAT_PMU_EVENTS + 1];	/* a unit's, summed; [last]: CPUs */
	struct moat_cpi2_lc *cpi2_lc;		/* an LC unit's detector */
	struct moat_cpi2_be *cpi2_be;		/* a BE unit's usage */
	char cpi2_suspects[256];
	/* This window's, for the controller (enforce.c) */
	double cpi2_cpi, cpi2_threshold;	/* the unit's CPI and its
						   outlier threshold */
	unsigned int nr_cpi2_sus;		/* 0 unless a victim */
	struct { __u64 cgid; double corr; } cpi2_sus[4];
	/* rdt.c: a unit's monitoring group */
	bool rdt_mon;
	struct rdt_mon mon;
};

/* The controller's knobs (Documentation/enforce.rst). */
struct enforce_knobs {
	unsigned int rqlat_p99_target_us;
	unsigned int memory_pressure_target_pct;
	unsigned int slack_pct, min_effect_pct, release_periods, culprits;
	unsigned int min_waits;		/* for a p99 that means anything */
	unsigned int cpu_priority;	/* 0: never cpu.weight or cpu.idle */
	unsigned int cpu_idle;		/* 0: the least weight is the floor */
	unsigned int cpi2_act;		/* 1: throttle CPI² victims' suspects */
	struct moat_ctl_step step[MOAT_RES_NR];
};

struct enforce_counters {
	unsigned long long throttles, releases, restores, undos, write_errors;
	/* by resource and enum moat_ctl_action */
	/* by the chain that decided (its first resource), resource, action */
	unsigned long long actions[MOAT_RES_NR][MOAT_RES_NR][MOAT_CTL_UNDO + 1];
};

/* Per-group class overrides, by id: they outlive the groups. */
struct override {
	char id[MOAT_ID_MAX];
	unsigned int class;		/* enum moat_class */
};

struct node_window {
	double cpu_usage;		/* busy CPUs, NAN before two reads */
	double psi_some_avg10[3];	/* cpu, memory, io; NAN: no PSI */
	__u64 cpu_busy, cpu_total;	/* /proc/stat jiffies at window end */
};

/* Groups found or gone since the last rescan's summary (groups.c). */
#define GROUP_CHURN_NAMED	3
struct group_churn {
	size_t n;
	char id[GROUP_CHURN_NAMED][MOAT_ID_MAX];
};

/* rules/<name>: a fixed slot each, so that its knob's storage stays put. */
struct rule_slot {
	bool used;
	char text[MOAT_KNOB_VALUE_MAX];
	struct moat_rule rule;
};

struct moatd {
	/* knobs */
	unsigned int mode;		/* enum moatd_mode */
	unsigned int period_ms;
	struct moat_qos_classes qos;
	struct rule_slot rules[MOATD_MAX_RULES];
	/* the used rules in name order, as classification tries them */
	struct moat_rule active_rules[MOATD_MAX_RULES];
	size_t nr_active_rules;

	struct moat_knob_tree *tree;
	struct moat_cg_layout layout;
	const struct moat_cg_hierarchy *cpu;
	const struct moat_cg_hierarchy *cpuacct;	/* v1, may be NULL */
	const struct moat_cg_hierarchy *memory;		/* v1, may be NULL */
	struct moat_cg_hierarchy scan;	/* the part of cpu moatd looks at */
	struct moat_rqlat *rqlat;	/* NULL: BPF did not load, and */
	struct moat_taskstats *ts;	/* delay accounting stands in */
	unsigned int rqlat_source;	/* delay.c: auto, bpf, taskstats */
	char rdt_root[PATH_MAX];	/* rdt.c: "": no resctrl */
	struct moat_rdt_info rdt;
	struct rdt *rdtc;		/* rdt.c's state */
	struct moat_cgroup_events *events;	/* NULL: walk every period */
	struct {			/* removed cgroups, not yet forgotten */
		__u64 ids[256];
		size_t n;
		bool overflow;
	} gone;
	bool cgroups_changed;		/* an event since the last rescan */
	unsigned int rescan_ms;		/* walk at least this often anyway */
	struct timespec last_rescan;

	struct moatd_group **groups;
	size_t nr_groups, cap_groups;
	struct { struct group_churn found, gone; } churn;
	struct override *overrides;
	size_t nr_overrides;

	/* settings.c */
	const char *config_path;
	bool config_given;
	char state_path[PATH_MAX];	/* "" when not persisting */
	char *defaults;			/* the writable knobs before any file */
	struct moat_config state;	/* what the state file holds */
	struct moat_config cli;		/* --mode, --listen: over the files */

	struct node_window node;

	/* enforce.c */
	struct moat_journal *journal;
	struct enforce_knobs ek;
	struct moat_ctl_state ctl;
	struct enforce_counters ec;
	struct blame_snap *blame;	/* the last period's, sorted */
	size_t nr_blame;
	bool blame_valid;		/* blame holds the last period's */

	bool period_changed;
	double cycle_us;		/* the last cycle's duration */
	struct timespec last_cycle;	/* when it ended */
	/* http.c, hints.c */
	char listen[64];		/* http/listen: "" none */
	bool listen_changed;
	struct http *http;
	unsigned int hint_cpu_margin_pct, hint_memory_margin_pct;
	bool started;			/* past start-up: the main loop runs */
	/* kube.c */
	struct kube *kube;
	unsigned int kube_publish, kube_interval_ms, kube_untaint_s;
	unsigned int kube_change_pct, kube_resync_s;
	/* cpi.c */
	struct moat_pmu *pmu;
	char pmu_event[MOAT_PMU_EVENTS][64];	/* cycles, instructions, LLC */
	int pmu_slot[MOAT_PMU_EVENTS];		/* -1: not counted */
	unsigned int cpi2_k_tenths, cpi2_alpha_pct, cpi2_min_cpus_pct;
	unsigned int cpi2_min_windows, cpi2_outliers, cpi2_horizon;
	unsigned int cpi2_corr_windows, cpi2_min_corr_pct;
	unsigned long long cpi2_windows, cpi2_victims;
	struct timespec last_observe;
};

/* main.c */
/**
 * moatd_set() - set a knob as moatctl and the config file do: a write to
 * rules/<name> creates the rule, and "" removes it.
 */
int moatd_set(struct moatd *d, const char *path, const char *val);
const char *moatd_version(void);
/* Microseconds since the last control cycle ended. */
double moatd_since_cycle_us(const struct moatd *d);

/* groups.c */
int groups_rescan(struct moatd *d);
void groups_free(struct moatd *d);

/* observe.c */
void observe_init(struct moatd_group *g);
void observe_reset(struct moatd *d, struct moatd_group *g);
void observe_close(struct moatd_group *g);
int observe_add_knobs(struct moatd *d, struct moatd_group *g);
void groups_observe(struct moatd *d);

/* enforce.c */
/**
 * enforce_open() - open the journal in @state_dir ("" : memory only) and
 * put back everything it records, before moatd does anything else.
 * Return: 0, or -EBADMSG for a journal that does not decode (logged).
 */
int enforce_open(struct moatd *d, const char *state_dir);
void enforce_close(struct moatd *d);
int enforce_add_knobs(struct moatd *d);
int enforce_add_group_knobs(struct moatd *d, struct moatd_group *g);
/* One period's decisions and writes; in observe mode, none. */
void enforce_cycle(struct moatd *d);
/*
 * Set each group's unit (a pod, or a rule's cgroup): once a cycle, after
 * the rescan, for everything after it (cpi.c, enforce.c, hints.c).
 */
int enforce_find_units(struct moatd *d);
/* Put back every value moatd changed; @why goes to the log. */
int enforce_restore_all(struct moatd *d, const char *why);
/* Whether the journal's file lags what moatd holds; then why, in @why. */
bool enforce_journal_stale(const struct moatd *d, char *why, size_t len);
/* At stop: if the journal is stale, say what its file still lists: -EIO. */
int enforce_report_stale(struct moatd *d);
/* @g stops being a group: put back what moatd changed in it. */
void enforce_drop_group(struct moatd *d, struct moatd_group *g);
/* @g's cgroup was removed and made again: what moatd wrote died with it. */
void enforce_forget_group(struct moatd *d, struct moatd_group *g);

/* rules.c */
int rules_create(struct moatd *d, const char *name);
void rules_remove(struct moatd *d, const char *name);
void rules_activate(struct moatd *d);

/* node.c */
void node_observe(struct moatd *d);
int node_add_knobs(struct moatd *d);

/* settings.c */
/* A command-line option's knob value: it wins over every file. */
int settings_cli(struct moatd *d, const char *path, const char *value);
int settings_load(struct moatd *d);
int settings_read_state(struct moatd *d);
int settings_reload(struct moatd *d);
/* Record that `moatctl set` gave @path @value, in the state file. */
int settings_persist(struct moatd *d, const char *path, const char *value);
void settings_free(struct moatd *d);

/* server.c */
struct server;
int server_open(struct server **out, const char *path, const char *group);
void server_close(struct server *s);
/* Append the fds to poll to @pfd, which has room for @max, from *@n. */
void server_poll_fds(struct server *s, struct pollfd *pfd, unsigned int *n,
		     unsigned int max);
/* Serve what poll() reported; @timeout_ms: how soon to come back. */
void server_work(struct server *s, struct moatd *d, int *timeout_ms);
/* Handle one request line; the response goes to @out. */
void server_handle(struct moatd *d, const char *line, bool may_write,
		   FILE *out);

/* http.c */
struct http;
int http_try_bind(const char *addr);
int http_open(struct http **out, struct moatd *d, const char *addr);
void http_close(struct http *h);
/* Append the fd to poll to @pfd; lower *@timeout_ms to what it needs. */
void http_poll_fd(struct http *h, struct pollfd *pfd, unsigned int *n,
		  unsigned int max, int *timeout_ms);
void http_work(struct http *h);
int http_add_knobs(struct moatd *d);

/* metrics.c */
int metrics_write(struct moatd *d, FILE *f);
/* @v in the fewest digits that read back as @v, into @buf. */
const char *shortest(char *buf, size_t len, double v);

/* hints.c */
int hints_write_metrics(struct moatd *d, FILE *f);
int hints_write_json(struct moatd *d, FILE *f);
struct kube_hints {
	double be_cpus, be_memory;	/* NAN: not known yet */
	double cpu_interference, memory_interference, cache_interference;
	char *json;			/* /hints without its time: to free */
};
int hints_for_kube(struct moatd *d, struct kube_hints *out);

/* delay.c: run-queue delay from BPF (rqlat), or from taskstats */
int delay_add_knobs(struct moatd *d);
/* Open the source rqlat/source names; the fallback where BPF fails. */
int delay_open(struct moatd *d, const struct moat_rqlat_opts *ro,
	       const char *state_dir, bool verbose);
void delay_close(struct moatd *d);
/* A group's waits since the first read, as the BPF map would have them. */
void delay_read_group(struct moatd *d, struct moatd_group *g,
		      struct moat_rqlat_hist *cum);

/*
 * rdt.c: resctrl; say once what there is, or that there is none; in
 * enforce mode, moat_lc and moat_be and their members.
 */
int rdt_add_knobs(struct moatd *d);
/* Find (or mount) resctrl; remove what a crashed moatd made. */
void rdt_open(struct moatd *d, const char *state_dir);
void rdt_close(struct moatd *d);
int rdt_add_group_knobs(struct moatd *d, struct moatd_group *g);
/* Once a period, after enforce_cycle(): groups, schemata, members. */
void rdt_cycle(struct moatd *d);
/* Remove every group moatd made; @why goes to the log. */
void rdt_restore(struct moatd *d, const char *why);
/* A task entered tracked unit @unit (BPF): queued for rdt_flush(). */
void rdt_task_event(struct moatd *d, __u64 unit, __u32 tid);
void rdt_flush(struct moatd *d);
/* BE's ways or % of bandwidth before the controller; NAN: no such. */
double rdt_be_original(const struct moatd *d, enum moat_resource r);
/* The least the controller may leave BE (resctrl/be/..._min). */
double rdt_be_floor(const struct moatd *d, enum moat_resource r);
/* The controller's limits of BE's ways and bandwidth; INFINITY: none. */
void rdt_be_cap(struct moatd *d, double ways, double mb_pct);
/* The class group's monitoring, or NULL when moat has none. */
const struct rdt_mon *rdt_class_mon(const struct moatd *d, int lc);

/* cpi.c */
int cpi_add_knobs(struct moatd *d);
int cpi_add_group_knobs(struct moatd *d, struct moatd_group *g);
/* Open the counters named by the pmu/ knobs; without them, go on. */
void cpi_open(struct moatd *d);
void cpi_close(struct moatd *d);
/* Each period, after groups_observe(): counters, CPI, CPI² detection. */
void cpi_cycle(struct moatd *d);
void cpi_free_group(struct moatd_group *g);

/* kube.c */
struct kube;
/* With kube/publish on and in a pod, start the API server's thread. */
int kube_open(struct moatd *d);
void kube_close(struct moatd *d);
void kube_cycle(struct moatd *d);
/* Node updates made, or failed requests (@errors). */
unsigned long long kube_counter(struct moatd *d, bool errors);
int kube_add_knobs(struct moatd *d);

#endif /* MOATD_H */
