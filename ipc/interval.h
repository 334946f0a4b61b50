/* SPDX-License-Identifier: MIT */
/*
 * interval — an index of half-open address ranges [start, end): an intrusive AVL tree
 * ordered by (start, end, node address), each node augmented with the largest end in its
 * subtree (CLRS 14.3). Insert, remove and both searches walk one root-to-leaf path, so
 * every operation is O(log n) with no recursion; an AVL tree of n nodes is at most
 * 1.44 log2(n + 2) high (29 levels for a million ranges).
 *
 * Intrusive: the caller embeds a node in its own object, fills start and end (start < end)
 * and keeps the node alive while it is in a tree. No allocation, no locking: the caller
 * serialises (the registration cache holds its mutex).
 */
#ifndef ODPEMU_IPC_INTERVAL_H
#define ODPEMU_IPC_INTERVAL_H

#include <stddef.h>
#include <stdint.h>

struct interval_node {
	uintptr_t start, end;		/* [start, end), start < end: the caller's key */
	/* the tree's own (valid only while the node is in a tree) */
	struct interval_node *left, *right, *parent;
	uintptr_t max_end;		/* the largest end in this subtree */
	int height;			/* of this subtree: 1 for a leaf */
};

struct interval_tree {
	struct interval_node *root;	/* NULL: empty (a zeroed tree is ready) */
	size_t count;
};

/* Add n (start and end set; equal ranges are allowed and kept apart by address). */
void interval_insert(struct interval_tree *t, struct interval_node *n);
/* Take n, which is in t, out of t. */
void interval_remove(struct interval_tree *t, struct interval_node *n);
/* The first node in order (lowest start, then lowest end) that covers [start, end), that
 * is node.start <= start and node.end >= end; NULL if none. start < end. */
struct interval_node *interval_find_covering(const struct interval_tree *t, uintptr_t start,
					     uintptr_t end);
/* The first node in order that overlaps [start, end) (node.start < end and
 * node.end > start); NULL if none. start < end. To visit every overlapping node, remove
 * each one found and ask again: k nodes cost O(k log n). */
struct interval_node *interval_find_overlap(const struct interval_tree *t, uintptr_t start,
					    uintptr_t end);

#endif
