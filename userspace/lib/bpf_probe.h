/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_BPF_PROBE_H
#define MOAT_BPF_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

struct btf;

/**
 * moat_vmlinux_btf() - the kernel's BTF (/sys/kernel/btf/vmlinux), parsed
 * at the first call and kept for the next, or NULL (errno) where there is
 * none.  Megabytes: moat_vmlinux_btf_drop() frees it (the next call
 * parses it again), as each object's loader does before libbpf parses
 * its own, and moatd once started.  Not for threads at once.
 */
const struct btf *moat_vmlinux_btf(void);
void moat_vmlinux_btf_drop(void);

/**
 * moat_probe_tp_btf() - whether tp_btf programs can attach to tracepoint
 * @tp: kernel BTF has its btf_trace_<tp> type and the kernel loads a
 * two-instruction tracing program against it.
 */
bool moat_probe_tp_btf(const char *tp);

struct bpf_program;
struct bpf_iter_attach_opts;

/**
 * moat_bpf_iter_run() - attach the iterator program @prog (with @opts, or
 * NULL), read it to the end and detach it: for an iterator run for what
 * it does, not for what it prints.  Return: 0 or -errno.
 */
int moat_bpf_iter_run(struct bpf_program *prog,
		      const struct bpf_iter_attach_opts *opts);

/**
 * moat_bpf_iter_tasks() - run the iter/task program @prog over every
 * thread: once over all tasks (which visits each process's leader), then
 * once over the threads of each process /proc shows with more than one
 * (v6.1's task iterator parameters; before, the kernel refuses them
 * with E2BIG, and the first pass is all).  Return: 0 or -errno of the
 * first pass.
 */
int moat_bpf_iter_tasks(struct bpf_program *prog);

/* One key of a per-CPU hash map and its @ncpus values, each @vsize. */
typedef int (*moat_percpu_fn)(__u64 key, const void *vals, void *ctx);

/**
 * moat_percpu_for_each() - call @fn for every entry of the per-CPU hash
 * map @fd (__u64 keys; @vsize, a multiple of 8, per CPU), in a few
 * syscalls: BPF_MAP_LOOKUP_BATCH (v5.6) returns a batch of keys with
 * every CPU's value each time.  A non-zero return of @fn stops the walk
 * and is returned.  Return: 0, or that, or -errno.
 */
int moat_percpu_for_each(int fd, size_t vsize, int ncpus, moat_percpu_fn fn,
			 void *ctx);

#endif /* MOAT_BPF_PROBE_H */
