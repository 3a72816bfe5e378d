// SPDX-License-Identifier: GPL-2.0-only
/*
 * bpf/rqlat.bpf.c with its hot path's cut points (rqlat_parts.h), for
 * tools/bench/overhead.sh: the same source, so the parts priced are
 * moat's, and moat's own object carries none of them.
 */
#define MOAT_BENCH_PARTS
#include "rqlat.bpf.c"
