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
#include "hist.h"
#include "log.h"
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
 * tp_btf needs kernel BTF and the btf_trace_<tp> type; load a two-insn
 * program against it to know for sure, as libbpf-tools does.
 */
static bool probe_tp_btf(const char *tp)
{
	LIBBPF_OPTS(bpf_prog_load_opts, opts,
		    .expected_attach_type = BPF_TRACE_RAW_TP);
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int id, fd;

	id = libbpf_find_vmlinux_btf_id(tp, BPF_TRACE_RAW_TP);
	if (id <= 0)
		return false;
	opts.attach_btf_id = id;
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, NULL, "GPL", insns,
			   sizeof(insns) / sizeof(insns[0]), &opts);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

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
	tp_btf = probe_tp_btf("sched_switch") && probe_tp_btf("sched_wakeup") &&
		 probe_tp_btf("sched_wakeup_new") &&
		 probe_tp_btf("sched_process_exit");
	choose_programs(r, opts->force_raw_tp || !tp_btf);
	pr_info("rqlat: kernel BTF found, tp_btf %s: attaching %s programs",
		tp_btf ? "supported" : "unsupported",
		r->raw_tp ? "raw_tp" : "tp_btf");

	if (!map_alloc_is_any_context()) {
		pr_info("rqlat: kernel before 6.1: preallocating the per-cgroup maps");
		bpf_map__set_map_flags(r->skel->maps.hists, 0);
		bpf_map__set_map_flags(r->skel->maps.blame, 0);
	}

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

int moat_rqlat_for_each_hist(struct moat_rqlat *r, moat_rqlat_hist_fn fn,
			     void *ctx)
{
	int fd = bpf_map__fd(r->skel->maps.hists);
	struct moat_rqlat_hist h;
	__u64 key, *prev = NULL;
	int err;

	while (!bpf_map_get_next_key(fd, prev, &key)) {
		prev = &key;
		err = read_percpu_hist(r, fd, key, &h);
		if (err == -ENOENT)	/* deleted since get_next_key */
			continue;
		if (err)
			return err;
		err = fn(key, &h, ctx);
		if (err)
			return err;
	}
	return errno == ENOENT ? 0 : -errno;
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
