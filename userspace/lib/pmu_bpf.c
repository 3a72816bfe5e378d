// SPDX-License-Identifier: GPL-2.0-only
/*
 * Counters per cgroup: libpfm4 turns event names into perf_event_attr,
 * perf_event_open() opens each on every CPU, and bpf/pmu.bpf.c charges
 * their growth to the cgroup that ran (pmu_bpf.h).
 *
 * libpfm4 is needed only to encode the events: it is loaded with
 * dlopen() for that and unloaded after, since its tables of every CPU's
 * events are some 3 MiB of RSS a daemon should not keep.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/perf_event.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <perfmon/pfmlib_perf_event.h>
#include "bpf_probe.h"
#include "log.h"
#include "peek.h"
#include "pmu_bpf.h"
#include "pmu.skel.h"

struct moat_pmu {
	struct pmu *skel;
	int ncpus;
	int *fds;			/* [event * ncpus + cpu], -1: none */
	char *names[MOAT_PMU_EVENTS];
	size_t n;
	struct moat_pmu_sum *buf;	/* one per CPU, for reads */
};

/* libpfm4's SONAME, stable since 2011 */
#define LIBPFM	"libpfm.so.4"

static struct {
	void *dl;
	int (*initialize)(void);
	void (*terminate)(void);
	int (*encode)(const char *str, int dfl_plm, pfm_os_t os, void *arg);
	const char *(*strerror)(int code);
} pfm;

static int pfm_load(void)
{
	int ret;

	pfm.dl = dlopen(LIBPFM, RTLD_NOW | RTLD_LOCAL);
	if (!pfm.dl) {
		pr_err("pmu: %s (libpfm4, to encode the events): %s", LIBPFM,
		       dlerror());
		return -ENOENT;
	}
	pfm.initialize = dlsym(pfm.dl, "pfm_initialize");
	pfm.terminate = dlsym(pfm.dl, "pfm_terminate");
	pfm.encode = dlsym(pfm.dl, "pfm_get_os_event_encoding");
	pfm.strerror = dlsym(pfm.dl, "pfm_strerror");
	if (!pfm.initialize || !pfm.terminate || !pfm.encode || !pfm.strerror) {
		pr_err("pmu: %s lacks a function moat needs", LIBPFM);
		dlclose(pfm.dl);
		return -ENOENT;
	}
	ret = pfm.initialize();
	if (ret != PFM_SUCCESS) {
		pr_err("pmu: libpfm4: %s", pfm.strerror(ret));
		dlclose(pfm.dl);
		return -EINVAL;
	}
	return 0;
}

static void pfm_unload(void)
{
	pfm.terminate();
	dlclose(pfm.dl);
	memset(&pfm, 0, sizeof(pfm));
}

static int encode(const char *name, struct perf_event_attr *attr)
{
	pfm_perf_encode_arg_t arg = { .attr = attr, .size = sizeof(arg) };
	int ret;

	memset(attr, 0, sizeof(*attr));
	ret = pfm.encode(name, PFM_PLM0 | PFM_PLM3, PFM_OS_PERF_EVENT, &arg);
	if (ret != PFM_SUCCESS) {
		pr_warn("pmu: event %s: libpfm4: %s", name, pfm.strerror(ret));
		return -EINVAL;
	}
	attr->size = sizeof(*attr);
	attr->read_format = 0;
	attr->disabled = 0;
	attr->inherit = 0;
	return 0;
}

/* Open @name on every CPU into fds[slot]; -errno of the first CPU's. */
static int open_event(struct moat_pmu *p, const char *name, size_t slot)
{
	struct perf_event_attr attr;
	int cpu, opened = 0, first = 0;

	if (encode(name, &attr))
		return -EINVAL;
	for (cpu = 0; cpu < p->ncpus; cpu++) {
		int fd = syscall(SYS_perf_event_open, &attr, -1, cpu, -1,
				 PERF_FLAG_FD_CLOEXEC);

		p->fds[slot * p->ncpus + cpu] = fd;
		if (fd >= 0)
			opened++;
		else if (!first)
			first = -errno;
	}
	if (opened)
		return 0;
	pr_warn("pmu: event %s: perf_event_open: %s; running without it", name,
		strerror(-first));
	return first ? first : -ENODEV;
}

static void close_slot(struct moat_pmu *p, size_t slot)
{
	int cpu;

	for (cpu = 0; cpu < p->ncpus; cpu++) {
		int *fd = &p->fds[slot * p->ncpus + cpu];

		if (*fd >= 0)
			close(*fd);
		*fd = -1;
	}
}

void moat_pmu_close(struct moat_pmu *p)
{
	size_t i;

	if (!p)
		return;
	pmu__destroy(p->skel);
	for (i = 0; i < MOAT_PMU_EVENTS; i++) {
		if (p->fds)
			close_slot(p, i);
		free(p->names[i]);
	}
	free(p->fds);
	free(p->buf);
	free(p);
}

int moat_pmu_open(const struct moat_pmu_opts *o, struct moat_pmu **out)
{
	struct bpf_map *maps[MOAT_PMU_EVENTS];
	struct moat_pmu *p;
	char opened[256] = "";
	size_t i;
	bool raw_tp;
	int err, cpu, ret;

	*out = NULL;
	ret = pfm_load();
	if (ret)
		return ret;
	p = calloc(1, sizeof(*p));
	if (!p) {
		pfm_unload();
		return -ENOMEM;
	}
	p->ncpus = libbpf_num_possible_cpus();
	p->fds = malloc(MOAT_PMU_EVENTS * (p->ncpus > 0 ? p->ncpus : 1) * sizeof(int));
	p->buf = calloc(p->ncpus > 0 ? p->ncpus : 1, sizeof(*p->buf));
	if (p->ncpus <= 0 || !p->fds || !p->buf) {
		err = p->ncpus <= 0 ? p->ncpus : -ENOMEM;
		goto fail;
	}
	memset(p->fds, -1, MOAT_PMU_EVENTS * p->ncpus * sizeof(int));
	for (i = 0; i < MOAT_PMU_EVENTS && o->events[i]; i++) {
		if (open_event(p, o->events[i], p->n))
			continue;
		p->names[p->n++] = strdup(o->events[i]);
		snprintf(opened + strlen(opened), sizeof(opened) - strlen(opened),
			 "%s%s", p->n > 1 ? ", " : "", o->events[i]);
	}
	pfm_unload();	/* encoded: the fds are all that is needed now */
	if (!p->n) {
		pr_warn("pmu: no event could be opened: no counters per cgroup");
		err = -ENOENT;
		goto fail;
	}
	pr_info("pmu: counting %s per cgroup", opened);

	p->skel = pmu__open();
	if (!p->skel) {
		err = -errno;
		pr_err("pmu: open BPF object: %s", strerror(-err));
		goto fail;
	}
	p->skel->rodata->nr_events = p->n;
	maps[0] = p->skel->maps.ev0;
	maps[1] = p->skel->maps.ev1;
	maps[2] = p->skel->maps.ev2;
	for (i = 0; i < MOAT_PMU_EVENTS; i++)
		bpf_map__set_max_entries(maps[i], p->ncpus);
	raw_tp = o->force_raw_tp || !moat_probe_tp_btf("sched_switch");
	bpf_program__set_autoload(p->skel->progs.pmu_switch_btf, !raw_tp);
	bpf_program__set_autoload(p->skel->progs.pmu_switch_raw, raw_tp);
	moat_vmlinux_btf_drop();	/* libbpf parses its own */
	err = pmu__load(p->skel);
	if (err) {
		pr_err("pmu: load BPF program: %s", strerror(-err));
		goto fail;
	}
	for (i = 0; i < p->n; i++)
		for (cpu = 0; cpu < p->ncpus; cpu++) {
			int fd = p->fds[i * p->ncpus + cpu];

			if (fd >= 0 &&
			    bpf_map_update_elem(bpf_map__fd(maps[i]), &cpu, &fd, BPF_ANY)) {
				err = -errno;
				pr_err("pmu: event %s on CPU %d into the map: %s",
				       p->names[i], cpu, strerror(-err));
				goto fail;
			}
		}
	err = pmu__attach(p->skel);
	if (err) {
		pr_err("pmu: attach to sched_switch: %s", strerror(-err));
		goto fail;
	}
	*out = p;
	return 0;
fail:
	moat_pmu_close(p);
	return err;
}

size_t moat_pmu_nr_events(const struct moat_pmu *p)
{
	return p->n;
}

const char *moat_pmu_event(const struct moat_pmu *p, size_t i)
{
	return i < p->n ? p->names[i] : NULL;
}

/* Tries of a read that met a copy taken during a charge. */
#define READ_TRIES	8

/* The @ncpus copies @v summed into @out; -EAGAIN if one was torn. */
static int sum_copies(const struct moat_pmu_sum *v, int ncpus,
		      struct moat_pmu_sum *out)
{
	int cpu, i;

	memset(out, 0, sizeof(*out));
	for (cpu = 0; cpu < ncpus; cpu++) {
		if (v[cpu].seq != v[cpu].seq_end)
			return -EAGAIN;
		for (i = 0; i < MOAT_PMU_EVENTS; i++) {
			out->count[i] += v[cpu].count[i];
			out->scaled[i] += v[cpu].scaled[i];
		}
		out->charges += v[cpu].charges;
	}
	return 0;
}

int moat_pmu_read_map(int fd, int ncpus, __u64 cgid, struct moat_pmu_sum *buf,
		      struct moat_pmu_sum *out)
{
	int t;

	for (t = 0; t < READ_TRIES; t++) {
		if (bpf_map_lookup_elem(fd, &cgid, buf))
			return -errno;
		if (!sum_copies(buf, ncpus, out))
			return 0;
	}
	return -EAGAIN;
}

int moat_pmu_read(struct moat_pmu *p, __u64 cgid, struct moat_pmu_sum *out)
{
	return moat_pmu_read_map(bpf_map__fd(p->skel->maps.sums), p->ncpus, cgid,
				 p->buf, out);
}

__u64 moat_pmu_drops(const struct moat_pmu *p)
{
	return p->skel->bss->pmu_drops;
}

struct sum_walk {
	int fd, ncpus;
	struct moat_pmu_sum *buf;
	moat_pmu_fn fn;
	void *ctx;
};

static int sum_cpus(__u64 key, const void *vals, void *ctx)
{
	struct sum_walk *w = ctx;
	struct moat_pmu_sum s;
	int err;

	if (sum_copies(vals, w->ncpus, &s)) {
		/* taken during a charge: this one again, on its own */
		err = moat_pmu_read_map(w->fd, w->ncpus, key, w->buf, &s);
		if (err == -EAGAIN || err == -ENOENT)
			return 0;	/* no reading this time; gone */
		if (err)
			return err;
	}
	return w->fn(key, &s, w->ctx);
}

int moat_pmu_for_each(struct moat_pmu *p, moat_pmu_fn fn, void *ctx)
{
	struct sum_walk w = { bpf_map__fd(p->skel->maps.sums), p->ncpus, p->buf,
			      fn, ctx };

	return moat_percpu_for_each(bpf_map__fd(p->skel->maps.sums),
				    sizeof(struct moat_pmu_sum), p->ncpus,
				    sum_cpus, &w);
}
