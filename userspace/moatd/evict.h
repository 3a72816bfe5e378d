/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOATD_EVICT_H
#define MOATD_EVICT_H

/*
 * The evict module: the last resort (Documentation/enforce.rst,
 * "Eviction").  A policy, evict_decide(), that picks at most one BE pod a
 * period when the node's memory stays short with BE pods' memory.high
 * exhausted, or (opt-in) when a BE pod is starved at its CPU floor; and
 * an actuator, evict_act(), that hands it to a thread of its own, which
 * asks the API server for the pod's eviction (policy/v1, so that
 * PodDisruptionBudgets and graceful termination apply) and records an
 * Event on it.  Nothing it does can be put back, so nothing is journaled:
 * evict/mode is dry-run by default.
 */
#include "moatd.h"

extern const struct moatd_module evict_module;

/* The period's eviction, if any, into @plan (plan->evict). */
void evict_decide(struct moatd *d, const struct period *p, struct plan *plan);
/* Carry it out: log it (dry-run), or hand it to the thread (on). */
void evict_act(struct moatd *d, const struct plan *plan);

/*
 * Where evictions go: the API server, from the thread; or a closed-loop
 * simulator's FAKE of it (selftests/test_sim.c), which answers the
 * eviction of pod @ns/@name with UID @uid at once, as the API server
 * would (its HTTP status: 201, 404, 409, 429, 500...; -1 none), to be
 * read at the next decision as the thread's answer is.  NULL: the API
 * server again.
 */
typedef long (*evict_api_fn)(void *ctx, const char *ns, const char *name, const char *uid);
void evict_set_api(struct moatd *d, evict_api_fn api, void *ctx);

enum evict_reason { EVICT_MEMORY, EVICT_CPU, EVICT_REASONS };
extern const char *const evict_reason_names[EVICT_REASONS];

/* Evictions asked for (@dry: only logged), by reason. */
unsigned long long evict_count(const struct moatd *d, enum evict_reason r, bool dry);
/* Refused by a PodDisruptionBudget (429); accepted but the pod stayed; failed. */
unsigned long long evict_refused(const struct moatd *d);
unsigned long long evict_stuck(const struct moatd *d);
unsigned long long evict_errors(const struct moatd *d);

#endif /* MOATD_EVICT_H */
