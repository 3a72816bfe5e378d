// SPDX-License-Identifier: GPL-2.0-only
/* The userspace side of bpf/cgstat.bpf.c (cgstat_bpf.h). */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "bpf_probe.h"
#include "cgroup.h"
#include "cgstat_bpf.h"
#include "cgstat.skel.h"
#include "log.h"

struct moat_cgstat_prog {
	struct cgstat *skel;
	struct bpf_program *prog;	/* the one loaded */
	bool psi;			/* its records carry pressure's sums */
};

/*
 * Which of the programs to load: the rstat flush kfunc this kernel has,
 * and pressure's sums (v2) where @psi.
 */
static struct bpf_program *choose(struct cgstat *skel, bool v2, bool psi)
{
	struct bpf_program *use = skel->progs.cgstat_no_flush;
	const struct btf *btf = v2 ? moat_vmlinux_btf() : NULL;
	struct bpf_program *all[] = {
		skel->progs.cgstat_css_flush_psi, skel->progs.cgstat_css_flush,
		skel->progs.cgstat_cgroup_flush_psi, skel->progs.cgstat_cgroup_flush,
		skel->progs.cgstat_no_flush,
	};
	size_t i;

	if (btf && btf__find_by_name_kind(btf, "css_rstat_flush", BTF_KIND_FUNC) > 0)
		use = psi ? skel->progs.cgstat_css_flush_psi : skel->progs.cgstat_css_flush;
	else if (btf && btf__find_by_name_kind(btf, "cgroup_rstat_flush", BTF_KIND_FUNC) > 0)
		use = psi ? skel->progs.cgstat_cgroup_flush_psi :
			    skel->progs.cgstat_cgroup_flush;
	for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		bpf_program__set_autoload(all[i], all[i] == use);
	return use;
}

struct moat_cgstat_walk {
	struct moat_cgstat_prog *p;
	struct bpf_link *link;
	struct moat_cgstat *rec;
	__u32 *keys;		/* the batch lookup's: the records' places */
	size_t n, cap;		/* records, and room for them in rec */
	size_t found;		/* cgroups the last read's walk visited */
};

/* Open and load with pressure's sums or without: 0 or -errno. */
static int open_load(struct moat_cgstat_prog *p, bool v2, bool psi, size_t room)
{
	int cpus = libbpf_num_possible_cpus(), err;

	p->skel = cgstat__open();
	if (!p->skel)
		return -errno;
	p->skel->rodata->v2 = v2;
	p->skel->rodata->page_size = sysconf(_SC_PAGESIZE);
	p->skel->rodata->nr_cpus = cpus > 0 ? cpus : 0;
	p->prog = choose(p->skel, v2, psi);
	p->psi = psi && p->prog != p->skel->progs.cgstat_no_flush;
	err = room ? bpf_map__set_max_entries(p->skel->maps.records, room) : 0;
	moat_vmlinux_btf_drop();	/* libbpf parses its own */
	if (!err)
		err = cgstat__load(p->skel);
	if (err) {
		cgstat__destroy(p->skel);
		p->skel = NULL;
	}
	return err;
}

/*
 * Whether this kernel has the cgroup iterator (v6.1): its attach target,
 * the function libbpf looks for as an iter/cgroup program's, in BTF.
 */
static bool has_cgroup_iter(void)
{
	const struct btf *btf = moat_vmlinux_btf();

	return btf && btf__find_by_name_kind(btf, "bpf_iter_cgroup", BTF_KIND_FUNC) > 0;
}

int moat_cgstat_load(bool v2, size_t room, struct moat_cgstat_prog **out,
		     char *why, size_t whylen)
{
	struct moat_cgstat_prog *p;
	int err;

	if (!has_cgroup_iter()) {
		snprintf(why, whylen, "this kernel has no cgroup iterator (bpf_iter_cgroup, v6.1)");
		return -EOPNOTSUPP;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	/*
	 * Pressure's sums need a per-CPU variable's address from kallsyms
	 * (cgstat.bpf.c: "Pressure"): without, the program that has none.
	 */
	err = v2 ? open_load(p, true, true, room) : -ENOENT;
	if (err)
		err = open_load(p, v2, false, room);
	if (err) {
		/*
		 * The kernel has the iterator: a refusal is the verifier's, or
		 * a privilege's, and said as such, never taken for a kernel
		 * without it (a verifier regression would read as skips).
		 */
		snprintf(why, whylen, "the cgroup iterator does not load: %s",
			 strerror(-err));
		free(p);
		return err;
	}
	*out = p;
	return 0;
}

bool moat_cgstat_has_psi(const struct moat_cgstat_prog *p)
{
	return p->psi;
}

bool moat_cgstat_has_usage(const struct moat_cgstat_prog *p)
{
	return p->prog != p->skel->progs.cgstat_no_flush;
}

void moat_cgstat_unload(struct moat_cgstat_prog *p)
{
	if (!p)
		return;
	cgstat__destroy(p->skel);
	free(p);
}

int moat_cgstat_walk_new(struct moat_cgstat_prog *p, const char *dir,
			 struct moat_cgstat_walk **out)
{
	union bpf_iter_link_info info = {};
	LIBBPF_OPTS(bpf_iter_attach_opts, opts, .link_info = &info,
		    .link_info_len = sizeof(info));
	struct moat_cgstat_walk *w;
	int fd, err;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	w = calloc(1, sizeof(*w));
	if (!w) {
		close(fd);
		return -ENOMEM;
	}
	w->p = p;
	info.cgroup.cgroup_fd = fd;
	info.cgroup.order = BPF_CGROUP_ITER_DESCENDANTS_PRE;
	w->link = bpf_program__attach_iter(p->prog, &opts);
	err = w->link ? 0 : -errno;
	close(fd);		/* the link holds the cgroup */
	if (err) {
		free(w);
		return err;
	}
	*out = w;
	return 0;
}

void moat_cgstat_walk_free(struct moat_cgstat_walk *w)
{
	if (!w)
		return;
	bpf_link__destroy(w->link);
	free(w->keys);
	free(w->rec);
	free(w);
}

static int by_id(const void *a, const void *b)
{
	const struct moat_cgstat *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

size_t moat_cgstat_room(const struct moat_cgstat_prog *p)
{
	return bpf_map__max_entries(p->skel->maps.records);
}

/*
 * The read() drives the walk, which puts the records in the records map
 * (cgstat.bpf.c: "Where the records go"); one batch lookup copies them
 * out, and the walk keeps them sorted by id, for the next walk of the
 * same program overwrites the map.
 */
int moat_cgstat_walk_read(struct moat_cgstat_walk *w)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	struct moat_cgstat_prog *p = w->p;
	__u32 out_batch, count;
	char buf[64];
	ssize_t got;
	int fd, err = 0;
	size_t n;

	w->n = 0;
	p->skel->bss->nr_records = 0;
	fd = bpf_iter_create(bpf_link__fd(w->link));
	if (fd < 0)
		return -errno;
	while ((got = read(fd, buf, sizeof(buf))) != 0) {
		if (got < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
	}
	close(fd);
	if (err)
		return err;
	n = w->found = p->skel->bss->nr_records;
	if (n > moat_cgstat_room(p))
		return -E2BIG;
	if (!n)
		return 0;
	if (n > w->cap) {
		void *rec = realloc(w->rec, n * sizeof(*w->rec));
		void *keys = rec ? realloc(w->keys, n * sizeof(*w->keys)) : NULL;

		if (rec)
			w->rec = rec;
		if (!keys)
			return -ENOMEM;
		w->keys = keys;
		w->cap = n;
	}
	count = n;
	err = bpf_map_lookup_batch(bpf_map__fd(p->skel->maps.records), NULL,
				   &out_batch, w->keys, w->rec, &count, &opts);
	if (err && err != -ENOENT)	/* ENOENT: the map's end, at full room */
		return err;
	if (count != n)
		return -EIO;
	w->n = n;
	qsort(w->rec, w->n, sizeof(*w->rec), by_id);
	return w->n;
}

__u64 moat_cgstat_walk_fingerprint(const struct moat_cgstat_walk *w)
{
	return moat_cgroup_set_fingerprint(w->rec, w->n, sizeof(*w->rec),
					   offsetof(struct moat_cgstat, id));
}

size_t moat_cgstat_walk_found(const struct moat_cgstat_walk *w)
{
	return w->found;
}

const struct moat_cgstat *moat_cgstat_walk_find(const struct moat_cgstat_walk *w,
						__u64 id)
{
	struct moat_cgstat key = { .id = id };

	if (!w->n)
		return NULL;
	return bsearch(&key, w->rec, w->n, sizeof(*w->rec), by_id);
}
