/* SPDX-License-Identifier: GPL-2.0-only */
#ifndef MOAT_FUZZ_TREE_H
#define MOAT_FUZZ_TREE_H

#include <stdbool.h>
#include "config.h"
#include "knob.h"

/* The one sample tree (its storage is static): build it once. */
struct moat_knob_tree *fuzz_tree(void);
char *fuzz_tree_text(const struct moat_knob_tree *t, bool writable_only);

#endif /* MOAT_FUZZ_TREE_H */
