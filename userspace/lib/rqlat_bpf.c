// SPDX-License-Identifier: GPL-2.0-only
/* The userspace side of bpf/rqlat.bpf.c: probe, load, attach, read. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "bpf_probe.h"
#include "hist.h"
#include "log.h"
#include "peek.h"
#include "rqlat_bpf.h"
#include "rqlat.skel.h"

#define VMLINUX_BTF "/sys/kernel/btf/vmlinux"

struct moat_rqlat {
	struct rqlat *skel;
	bool raw_tp;
	int ncpus;
	void *percpu_buf;	/* one per-CPU value of the largest map */
};

/*
 * The per-cgroup maps are filled from sched_switch, under the runqueue
 * lock, and allocate entries as cgroups appear.  Since v6.1 ("bpf: Convert
 * hash map to bpf_mem_alloc") that allocation is safe in any context;
 * before, it was kmalloc(GFP_NOWAIT), which may wake kswapd and so take a
 * runqueue lock: preallocate there instead.
 */
static bool map_alloc_is_any_context(void)
{
	struct utsname u;
	int major, minor;

	if (uname(&u) || sscanf(u.release, "%d.%d", &major, &minor) != 2)
		return false;
	return major > 6 || (major == 6 && minor >= 1);
}

static void choose_programs(struct moat_rqlat *r, bool raw_tp)
{
	struct rqlat *s = r->skel;

	r->raw_tp = raw_tp;
	bpf_program__set_autoload(s->progs.sched_switch_btf, !raw_tp);
	bpf_program__set_autoload(s->progs.sched_wakeup_btf, !raw_tp);
	bpf_program__set_autoload(s->progs.sched_wakeup_new_btf, !raw_tp);
	bpf_program__set_autoload(s->progs.sched_process_exit_btf, !raw_tp);
	bpf_program__set_autoload(s->progs.sched_switch_raw, raw_tp);
	bpf_program__set_autoload(s->progs.sched_wakeup_raw, raw_tp);
	bpf_program__set_autoload(s->progs.sched_wakeup_new_raw, raw_tp);
	bpf_program__set_autoload(s->progs.sched_process_exit_raw, raw_tp);
	/* the starts in task local storage: tp_btf only (a trusted task) */
	bpf_program__set_autoload(s->progs.rqlat_fork, !raw_tp);
	bpf_program__set_autoload(s->progs.seed_starts, !raw_tp);
	bpf_program__set_autoattach(s->progs.seed_starts, false);
	bpf_map__set_autocreate(s->maps.starts, !raw_tp);
	/* the pid hash: every start with raw_tp, the few without storage else */
	bpf_map__set_max_entries(s->maps.runnable,
				 raw_tp ? MOAT_MAX_TASKS : MOAT_MAX_TASKS_FALLBACK);
}

int moat_rqlat_open(const struct moat_rqlat_opts *opts, struct moat_rqlat **out)
{
	struct moat_rqlat *r;
	bool tp_btf;
	int err;

	if (access(VMLINUX_BTF, R_OK)) {
		pr_err("kernel has no BTF (%s: %s): the BPF programs need CONFIG_DEBUG_INFO_BTF=y",
		       VMLINUX_BTF, strerror(errno));
		return -EOPNOTSUPP;
	}

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->ncpus = libbpf_num_possible_cpus();
	if (r->ncpus < 0) {
		err = r->ncpus;
		goto err_free;
	}
	r->percpu_buf = calloc(r->ncpus, sizeof(struct moat_rqlat_cg));
	if (!r->percpu_buf) {
		err = -ENOMEM;
		goto err_free;
	}

	r->skel = rqlat__open();
	if (!r->skel) {
		err = -errno;
		pr_err("rqlat: open BPF object: %s", strerror(-err));
		goto err_free;
	}
	/* task local storage from tracing programs: v5.11 */
	tp_btf = moat_probe_tp_btf("sched_switch") && moat_probe_tp_btf("sched_wakeup") &&
		 moat_probe_tp_btf("sched_wakeup_new") &&
		 moat_probe_tp_btf("sched_process_exit") &&
		 moat_probe_tp_btf("sched_process_fork") &&
		 libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) == 1;
	choose_programs(r, opts->force_raw_tp || !tp_btf);
	/* indexed by a runqueue's cpu, below the possible CPUs */
	bpf_map__set_max_entries(r->skel->maps.clocks, r->ncpus);
	pr_info("rqlat: kernel BTF found, tp_btf and task storage %s: attaching %s programs",
		tp_btf ? "supported" : "unsupported",
		r->raw_tp ? "raw_tp" : "tp_btf");

	if (!map_alloc_is_any_context()) {
		pr_info("rqlat: kernel before 6.1: preallocating the per-cgroup maps");
		bpf_map__set_map_flags(r->skel->maps.hists, 0);
		bpf_map__set_map_flags(r->skel->maps.blame, 0);
	}

	moat_vmlinux_btf_drop();	/* libbpf parses its own */
	err = rqlat__load(r->skel);
	if (err) {
		pr_err("rqlat: load BPF programs: %s%s", strerror(-err),
		       err == -EPERM ? " (CAP_BPF and CAP_PERFMON are needed)" : "");
		goto err_destroy;
	}
	err = rqlat__attach(r->skel);
	if (err) {
		pr_err("rqlat: attach to sched tracepoints: %s", strerror(-err));
		goto err_destroy;
	}
	/*
	 * After the fork hook, so that no task is missed.  Without it the
	 * tasks already there keep their starts in the pid hash: slower,
	 * not wrong.
	 */
	err = r->raw_tp ? 0 : moat_bpf_iter_tasks(r->skel->progs.seed_starts);
	if (err)
		pr_warn("rqlat: the tasks already running keep their starts in the pid hash: iter/task: %s",
			strerror(-err));
	*out = r;
	return 0;

err_destroy:
	rqlat__destroy(r->skel);
err_free:
	free(r->percpu_buf);
	free(r);
	return err;
}

void moat_rqlat_close(struct moat_rqlat *r)
{
	if (!r)
		return;
	rqlat__destroy(r->skel);
	free(r->percpu_buf);
	free(r);
}

const char *moat_rqlat_attach_kind(const struct moat_rqlat *r)
{
	return r->raw_tp ? "raw_tp" : "tp_btf";
}

int moat_rqlat_watch(struct moat_rqlat *r, __u64 cgid, bool on)
{
	int fd = bpf_map__fd(r->skel->maps.watched);
	__u8 one = 1;

	if (on && bpf_map_update_elem(fd, &cgid, &one, BPF_ANY))
		return -errno;
	if (!on && bpf_map_delete_elem(fd, &cgid) && errno != ENOENT)
		return -errno;
	/* Invalidates the per-CPU cached answers in the hists map. */
	__atomic_add_fetch(&r->skel->bss->watch_gen, 1, __ATOMIC_RELEASE);
	return 0;
}

static int read_percpu_hist(struct moat_rqlat *r, int fd, __u64 cgid,
			    struct moat_rqlat_hist *out)
{
	const struct moat_rqlat_cg *pc = r->percpu_buf;
	int cpu;

	if (bpf_map_lookup_elem(fd, &cgid, r->percpu_buf))
		return -errno;
	memset(out, 0, sizeof(*out));
	for (cpu = 0; cpu < r->ncpus; cpu++)
		moat_hist_add(out, &pc[cpu].hist);
	return 0;
}

int moat_rqlat_read_hist(struct moat_rqlat *r, __u64 cgid,
			 struct moat_rqlat_hist *out)
{
	return read_percpu_hist(r, bpf_map__fd(r->skel->maps.hists), cgid, out);
}

struct hist_walk {
	int ncpus;
	moat_rqlat_hist_fn fn;
	void *ctx;
};

static int sum_hist(__u64 key, const void *vals, void *ctx)
{
	const struct moat_rqlat_cg *v = vals;
	struct hist_walk *w = ctx;
	struct moat_rqlat_hist h;
	int cpu;

	memset(&h, 0, sizeof(h));
	for (cpu = 0; cpu < w->ncpus; cpu++)
		moat_hist_add(&h, &v[cpu].hist);
	return w->fn(key, &h, w->ctx);
}

/* All histograms in a few syscalls (moat_percpu_for_each()). */
int moat_rqlat_for_each_hist(struct moat_rqlat *r, moat_rqlat_hist_fn fn,
			     void *ctx)
{
	struct hist_walk w = { r->ncpus, fn, ctx };

	return moat_percpu_for_each(bpf_map__fd(r->skel->maps.hists),
				    sizeof(struct moat_rqlat_cg), r->ncpus,
				    sum_hist, &w);
}

int moat_rqlat_for_each_blame(struct moat_rqlat *r, moat_rqlat_blame_fn fn,
			      void *ctx)
{
	int fd = bpf_map__fd(r->skel->maps.blame);
	const struct moat_blame_val *pc = r->percpu_buf;
	struct moat_blame_key key, *prev = NULL;
	struct moat_blame_val sum;
	int cpu, err;

	while (!bpf_map_get_next_key(fd, prev, &key)) {
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, r->percpu_buf)) {
			if (errno == ENOENT)
				continue;
			return -errno;
		}
		memset(&sum, 0, sizeof(sum));
		for (cpu = 0; cpu < r->ncpus; cpu++) {
			sum.wait_ns += pc[cpu].wait_ns;
			sum.count += pc[cpu].count;
		}
		err = fn(&key, &sum, ctx);
		if (err)
			return err;
	}
	return errno == ENOENT ? 0 : -errno;
}

static bool in_ids(__u64 id, const __u64 *ids, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

int moat_rqlat_forget(struct moat_rqlat *r, const __u64 *ids, size_t n)
{
	int hists = bpf_map__fd(r->skel->maps.hists);
	int watched = bpf_map__fd(r->skel->maps.watched);
	int blame = bpf_map__fd(r->skel->maps.blame);
	struct moat_blame_key key, next;
	bool more;
	size_t i;

	for (i = 0; i < n; i++) {
		bpf_map_delete_elem(hists, &ids[i]);
		bpf_map_delete_elem(watched, &ids[i]);
	}
	/*
	 * Walk the blame map once for all of them.  Find the next key before
	 * deleting the current one, or get_next_key starts over.
	 */
	more = !bpf_map_get_next_key(blame, NULL, &key);
	while (more) {
		more = !bpf_map_get_next_key(blame, &key, &next);
		if (in_ids(key.victim, ids, n) || in_ids(key.culprit, ids, n))
			bpf_map_delete_elem(blame, &key);
		key = next;
	}
	return 0;
}

__u64 moat_rqlat_hash_marks(const struct moat_rqlat *r)
{
	return r->skel->bss->rqlat_hash_marks;
}

int moat_rqlat_hash_has(const struct moat_rqlat *r, __u32 tid)
{
	__u64 since;

	return !bpf_map_lookup_elem(bpf_map__fd(r->skel->maps.runnable), &tid, &since);
}

void moat_rqlat_drops(const struct moat_rqlat *r, __u64 drops[MOAT_DROP_NR])
{
	memcpy(drops, r->skel->bss->rqlat_drops, sizeof(r->skel->bss->rqlat_drops));
}

const char *moat_rqlat_drop_name(enum moat_rqlat_drop why)
{
	switch (why) {
	case MOAT_DROP_START:
		return "runnable_map_full";
	case MOAT_DROP_HIST:
		return "hist_map_full";
	case MOAT_DROP_BLAME:
		return "blame_map_full";
	case MOAT_DROP_NR:
		break;
	}
	return "unknown";
}

int moat_rqlat_for_each_prog(struct moat_rqlat *r, moat_rqlat_prog_fn fn,
			     void *ctx)
{
	struct bpf_program *prog;
	int err;

	bpf_object__for_each_program(prog, r->skel->obj) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(prog);

		if (fd < 0 || bpf_obj_get_info_by_fd(fd, &info, &len))
			continue;	/* not loaded: the other attach kind */
		err = fn(bpf_program__name(prog), info.run_time_ns, info.run_cnt,
			 ctx);
		if (err)
			return err;
	}
	return 0;
}
