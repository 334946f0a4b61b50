/* SPDX-License-Identifier: MIT */
/* interval — the AVL interval tree of interval.h. Every change ends in fix_up, which
 * walks from the lowest changed node to the root recomputing height and max_end and
 * rotating where a node is out of balance: one path, O(log n), no recursion. */
#include <stdbool.h>

#include "interval.h"

static int height(const struct interval_node *n)
{
	return n ? n->height : 0;
}

/* Height and max_end of n from its children (which are up to date). */
static void update(struct interval_node *n)
{
	int hl = height(n->left), hr = height(n->right);

	n->height = 1 + (hl > hr ? hl : hr);
	n->max_end = n->end;
	if (n->left && n->left->max_end > n->max_end)
		n->max_end = n->left->max_end;
	if (n->right && n->right->max_end > n->max_end)
		n->max_end = n->right->max_end;
}

/* Make nu the child of p that old was (the root if p is NULL). */
static void replace_child(struct interval_tree *t, struct interval_node *p,
			  struct interval_node *old, struct interval_node *nu)
{
	if (!p)
		t->root = nu;
	else if (p->left == old)
		p->left = nu;
	else
		p->right = nu;
	if (nu)
		nu->parent = p;
}

/* x's right child takes x's place, x becomes its left child. Returns the new top. */
static struct interval_node *rotate_left(struct interval_tree *t, struct interval_node *x)
{
	struct interval_node *y = x->right;

	replace_child(t, x->parent, x, y);
	x->right = y->left;
	if (x->right)
		x->right->parent = x;
	y->left = x;
	x->parent = y;
	update(x);
	update(y);
	return y;
}

static struct interval_node *rotate_right(struct interval_tree *t, struct interval_node *x)
{
	struct interval_node *y = x->left;

	replace_child(t, x->parent, x, y);
	x->left = y->right;
	if (x->left)
		x->left->parent = x;
	y->right = x;
	x->parent = y;
	update(x);
	update(y);
	return y;
}

/* From n up to the root: heights, max_end, and AVL balance (|h(left) - h(right)| <= 1).
 * Always to the root, even when nothing changes any more: simpler than proving where
 * max_end stops changing, and still one path. */
static void fix_up(struct interval_tree *t, struct interval_node *n)
{
	while (n) {
		int balance;

		update(n);
		balance = height(n->left) - height(n->right);
		if (balance > 1) {
			if (height(n->left->left) < height(n->left->right))
				rotate_left(t, n->left);
			n = rotate_right(t, n);
		} else if (balance < -1) {
			if (height(n->right->right) < height(n->right->left))
				rotate_right(t, n->right);
			n = rotate_left(t, n);
		}
		n = n->parent;
	}
}

static bool before(const struct interval_node *a, const struct interval_node *b)
{
	if (a->start != b->start)
		return a->start < b->start;
	if (a->end != b->end)
		return a->end < b->end;
	return (uintptr_t)a < (uintptr_t)b;
}

void interval_insert(struct interval_tree *t, struct interval_node *n)
{
	struct interval_node *p = NULL, **link = &t->root;

	while (*link) {
		p = *link;
		link = before(n, p) ? &p->left : &p->right;
	}
	n->left = n->right = NULL;
	n->parent = p;
	n->height = 1;
	n->max_end = n->end;
	*link = n;
	t->count++;
	fix_up(t, p);
}

void interval_remove(struct interval_tree *t, struct interval_node *n)
{
	struct interval_node *from;	/* the lowest node whose subtree changed */

	if (n->left && n->right) {
		/* n's successor s (leftmost of the right subtree, no left child) takes its place */
		struct interval_node *s = n->right;

		while (s->left)
			s = s->left;
		if (s->parent == n) {
			from = s;
		} else {
			from = s->parent;
			replace_child(t, s->parent, s, s->right);
			s->right = n->right;
			s->right->parent = s;
		}
		replace_child(t, n->parent, n, s);
		s->left = n->left;
		s->left->parent = s;
	} else {
		from = n->parent;
		replace_child(t, n->parent, n, n->left ? n->left : n->right);
	}
	n->left = n->right = n->parent = NULL;
	t->count--;
	fix_up(t, from);
}

/* The first node in order with start <= smax and end >= emin. One path down: the nodes
 * with start <= smax are a prefix of the order, so at a node inside it the whole left
 * subtree is inside it too, and its max_end says whether the answer is there; at a node
 * past it only the left subtree can hold the answer. The current subtree always holds
 * the answer if there is one, so a subtree whose max_end is too small ends the search. */
static struct interval_node *leftmost(const struct interval_tree *t, uintptr_t smax,
				      uintptr_t emin)
{
	struct interval_node *n = t->root;

	while (n && n->max_end >= emin) {
		if (n->start > smax)
			n = n->left;
		else if (n->left && n->left->max_end >= emin)
			n = n->left;
		else if (n->end >= emin)
			return n;
		else
			n = n->right;
	}
	return NULL;
}

struct interval_node *interval_find_covering(const struct interval_tree *t, uintptr_t start,
					     uintptr_t end)
{
	return leftmost(t, start, end);
}

struct interval_node *interval_find_overlap(const struct interval_tree *t, uintptr_t start,
					    uintptr_t end)
{
	/* node.start < end and node.end > start; end > start >= 0, so neither wraps */
	return leftmost(t, end - 1, start + 1);
}
