/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * A wait's slot in struct moat_rqlat_hist (bpf/rqlat.h): floor(log2(ns)),
 * clamped to the last slot.  Shared by bpf/rqlat.bpf.c and the probe in
 * tools/bench/stamp.bpf.c, so both count in the same slots.
 */
#ifndef MOAT_HIST_SLOT_BPF_H
#define MOAT_HIST_SLOT_BPF_H

static __always_inline __u32 log2_u32(__u32 v)
{
	__u32 r, shift;

	r = (v > 0xFFFF) << 4; v >>= r;
	shift = (v > 0xFF) << 3; v >>= shift; r |= shift;
	shift = (v > 0xF) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r;
}

static __always_inline __u32 hist_slot(__u64 ns)
{
	__u32 hi = ns >> 32;
	__u32 slot = hi ? log2_u32(hi) + 32 : log2_u32(ns);

	return slot < MOAT_HIST_SLOTS ? slot : MOAT_HIST_SLOTS - 1;
}

#endif
