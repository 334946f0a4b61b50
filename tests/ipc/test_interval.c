/* SPDX-License-Identifier: MIT */
/* ipc/interval.c, the index of address ranges the daemon's watches and the library's
 * registration cache keep: against brute force on a small space with many overlaps and
 * duplicates (both searches, every invariant of the tree), and a million ranges (the AVL
 * height bound, then removal in random order). --seed N (or $T_SEED) repeats a run. */
#include <stdbool.h>
#include <stdlib.h>

#include "interval.h"
#include "t.h"

/* ---- the interval index ---- */

/* Checks order, parent links, AVL balance and max_end below n; returns the height. */
static int check_subtree(const struct interval_node *n, const struct interval_node *parent,
			 const struct interval_node **prev, size_t *count, bool *ok)
{
	int hl, hr;
	uintptr_t max;

	if (!n)
		return 0;
	if (n->parent != parent)
		*ok = false;
	hl = check_subtree(n->left, n, prev, count, ok);
	if (*prev && ((*prev)->start > n->start ||
		      ((*prev)->start == n->start && (*prev)->end > n->end)))
		*ok = false;
	*prev = n;
	(*count)++;
	hr = check_subtree(n->right, n, prev, count, ok);
	max = n->end;
	if (n->left && n->left->max_end > max)
		max = n->left->max_end;
	if (n->right && n->right->max_end > max)
		max = n->right->max_end;
	if (n->max_end != max || hl - hr > 1 || hr - hl > 1 ||
	    n->height != 1 + (hl > hr ? hl : hr))
		*ok = false;
	return 1 + (hl > hr ? hl : hr);
}

/* The tree's invariants, and its height within the AVL bound: a tree of height h has at
 * least N(h) = N(h-1) + N(h-2) + 1 nodes. */
static void check_tree(const struct interval_tree *t, const char *what)
{
	const struct interval_node *prev = NULL;
	size_t count = 0, n1 = 1, n0 = 0;
	bool ok = true;
	int h = check_subtree(t->root, NULL, &prev, &count, &ok);

	T_CHECK(ok, "%s: order, links, balance, max_end", what);
	T_EQ(count, t->count, what);
	for (int i = 1; i < h; i++) {
		size_t n2 = n1 + n0 + 1;

		n0 = n1;
		n1 = n2;
	}
	T_CHECK(h == 0 || count >= n1, "%s: height %d for %zu nodes", what, h, count);
}

static bool node_before(const struct interval_node *a, const struct interval_node *b)
{
	if (a->start != b->start)
		return a->start < b->start;
	if (a->end != b->end)
		return a->end < b->end;
	return (uintptr_t)a < (uintptr_t)b;
}

/* Against brute force on a small space with many overlaps and duplicates. */
static void test_interval_small(struct t_rng *r)
{
	enum { N = 2000 };
	struct interval_node *nodes = calloc(N, sizeof(*nodes));
	bool *in = calloc(N, sizeof(*in));
	struct interval_tree t = { 0 };

	if (!nodes || !in)
		abort();
	for (int round = 0; round < 20000; round++) {
		size_t i = t_below(r, N);
		uintptr_t qs = t_below(r, 1100), qe = qs + 1 + t_below(r, 40);
		const struct interval_node *want_cov = NULL, *want_ov = NULL;

		if (in[i]) {
			interval_remove(&t, &nodes[i]);
			in[i] = false;
		} else {
			nodes[i].start = t_below(r, 1000);
			nodes[i].end = nodes[i].start + 1 + t_below(r, 60);
			interval_insert(&t, &nodes[i]);
			in[i] = true;
		}
		for (size_t k = 0; k < N; k++) {
			const struct interval_node *n = &nodes[k];

			if (!in[k])
				continue;
			if (n->start <= qs && n->end >= qe &&
			    (!want_cov || node_before(n, want_cov)))
				want_cov = n;
			if (n->start < qe && n->end > qs && (!want_ov || node_before(n, want_ov)))
				want_ov = n;
		}
		T_CHECK(interval_find_covering(&t, qs, qe) == want_cov,
			"covering [%zu,%zu) round %d", (size_t)qs, (size_t)qe, round);
		T_CHECK(interval_find_overlap(&t, qs, qe) == want_ov, "overlap [%zu,%zu) round %d",
			(size_t)qs, (size_t)qe, round);
		if (round % 1000 == 0)
			check_tree(&t, "small tree");
	}
	check_tree(&t, "small tree at the end");
	free(nodes);
	free(in);
}

/* A million ranges: balanced (height within the AVL bound), no recursion in the tree;
 * then half removed in random order, then the rest. */
static void test_interval_million(struct t_rng *r)
{
	enum { N = 1000000 };
	struct interval_node *nodes = calloc(N, sizeof(*nodes));
	size_t *order = malloc(N * sizeof(*order));
	struct interval_tree t = { 0 };
	size_t found = 0;

	if (!nodes || !order)
		abort();
	for (size_t i = 0; i < N; i++) {
		nodes[i].start = (uintptr_t)t_below(r, (uint64_t)1 << 40);
		nodes[i].end = nodes[i].start + 1 + t_below(r, 1 << 20);
		interval_insert(&t, &nodes[i]);
		order[i] = i;
	}
	check_tree(&t, "a million");
	for (size_t i = 0; i < 1000; i++) {
		const struct interval_node *n = &nodes[t_below(r, N)];

		found += interval_find_covering(&t, n->start, n->end) != NULL;
	}
	T_EQ(found, 1000, "each range covers itself");
	for (size_t i = N - 1; i > 0; i--) {
		size_t j = t_below(r, i + 1), tmp = order[i];

		order[i] = order[j];
		order[j] = tmp;
	}
	for (size_t i = 0; i < N / 2; i++)
		interval_remove(&t, &nodes[order[i]]);
	check_tree(&t, "half removed");
	for (size_t i = N / 2; i < N; i++)
		interval_remove(&t, &nodes[order[i]]);
	T_CHECK(!t.root && !t.count, "empty");
	free(nodes);
	free(order);
}

int main(int argc, char **argv)
{
	struct t_rng r = { t_seed(argc, argv, 16) };

	test_interval_small(&r);
	test_interval_million(&r);
	return t_done("interval");
}
