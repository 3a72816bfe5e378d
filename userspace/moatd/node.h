/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOATD_NODE_H
#define MOATD_NODE_H

/* The node module: the node's CPU utilization, memory and pressure. */
#include "moatd.h"

extern const struct moatd_module node_module;

/* Read the node's signals of this period into @out. */
void node_sample(struct moatd *d, struct node_sample *out);

#endif /* MOATD_NODE_H */
