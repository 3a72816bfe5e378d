/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_BPF_PROBE_H
#define MOAT_BPF_PROBE_H

#include <stdbool.h>

/**
 * moat_probe_tp_btf() - whether tp_btf programs can attach to tracepoint
 * @tp: kernel BTF has its btf_trace_<tp> type and the kernel loads a
 * two-instruction tracing program against it.
 */
bool moat_probe_tp_btf(const char *tp);

#endif /* MOAT_BPF_PROBE_H */
