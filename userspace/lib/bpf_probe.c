// SPDX-License-Identifier: GPL-2.0-only
/* Feature probes for choosing between tp_btf and raw_tp programs. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "bpf_probe.h"

/*
 * The kernel's BTF, parsed once for an object's probes: a parse of
 * /sys/kernel/btf/vmlinux (5.5 MB on 6.18) takes 50 ms on this project's
 * machine, and moatd's start made one in each of its 11 probes, besides
 * the 3 libbpf makes, one for each object it loads (no API hands it
 * one).  The loaders drop it before libbpf's: two at once in memory
 * raised moatd's peak RSS, the start's, from 18.0 to 23.8 MiB.
 */
static struct btf *vmlinux;

const struct btf *moat_vmlinux_btf(void)
{
	if (!vmlinux)
		vmlinux = btf__load_vmlinux_btf();
	return vmlinux;
}

void moat_vmlinux_btf_drop(void)
{
	btf__free(vmlinux);
	vmlinux = NULL;
}

bool moat_probe_tp_btf(const char *tp)
{
	LIBBPF_OPTS(bpf_prog_load_opts, opts,
		    .expected_attach_type = BPF_TRACE_RAW_TP);
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	const struct btf *btf = moat_vmlinux_btf();
	char name[128];
	int id, fd;

	/* libbpf_find_vmlinux_btf_id(tp, BPF_TRACE_RAW_TP)'s lookup */
	if ((size_t)snprintf(name, sizeof(name), "btf_trace_%s", tp) >= sizeof(name))
		return false;
	id = btf ? btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF) : -ENOENT;
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

#define BATCH	128

int moat_percpu_for_each(int fd, size_t vsize, int ncpus, moat_percpu_fn fn,
			 void *ctx)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	__u64 keys[BATCH], cursor;
	bool first = true, done = false;
	char *vals;
	__u32 n, i;
	int err = 0;

	vals = malloc(vsize * ncpus * BATCH);
	if (!vals)
		return -ENOMEM;
	while (!done && !err) {
		n = BATCH;
		err = bpf_map_lookup_batch(fd, first ? NULL : &cursor, &cursor,
					   keys, vals, &n, &opts);
		first = false;
		if (err == -ENOENT || (err && errno == ENOENT)) {
			done = true;	/* the last batch, maybe not empty */
			err = 0;
		} else if (err) {
			err = -errno;
			break;
		}
		for (i = 0; i < n && !err; i++)
			err = fn(keys[i], vals + i * ncpus * vsize, ctx);
	}
	free(vals);
	return err;
}

int moat_bpf_iter_run(struct bpf_program *prog,
		      const struct bpf_iter_attach_opts *opts)
{
	struct bpf_link *link = bpf_program__attach_iter(prog, opts);
	char buf[512];
	ssize_t n;
	int fd, err = 0;

	if (!link)
		return -errno;
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		err = -errno;
	} else {
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			;
		if (n < 0)
			err = -errno;
		close(fd);
	}
	bpf_link__destroy(link);
	return err;
}

int moat_bpf_iter_tasks(struct bpf_program *prog)
{
	struct dirent *e;
	struct stat st;
	char path[64];
	DIR *proc;
	int err;

	err = moat_bpf_iter_run(prog, NULL);
	if (err)
		return err;
	proc = opendir("/proc");
	if (!proc)
		return 0;
	while ((e = readdir(proc))) {
		union bpf_iter_link_info li = {};
		LIBBPF_OPTS(bpf_iter_attach_opts, opts, .link_info = &li,
			    .link_info_len = sizeof(li));
		char *end;
		long pid = strtol(e->d_name, &end, 10);

		if (*end || pid <= 0)
			continue;
		/* procfs counts a task directory's threads in its links */
		snprintf(path, sizeof(path), "/proc/%ld/task", pid);
		if (stat(path, &st) || st.st_nlink <= 3)
			continue;
		li.task.pid = pid;
		err = moat_bpf_iter_run(prog, &opts);
		/* a link info longer than the kernel's: no task parameters */
		if (err == -E2BIG || err == -EINVAL)
			break;
	}
	closedir(proc);
	return 0;
}
