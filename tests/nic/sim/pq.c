/* SPDX-License-Identifier: MIT */
/* A binary min-heap of timed events, ordered by (time, sequence): two events due at the same
 * virtual time run in the order they were scheduled, so a run never depends on heap layout.
 * Also the growable FIFO the model keeps its queues in. */
#include <stdlib.h>
#include <string.h>

#include "sim.h"

static bool ev_before(const struct ev *a, const struct ev *b)
{
	return a->t != b->t ? a->t < b->t : a->seq < b->seq;
}

static void ev_swap(struct ev *a, struct ev *b)
{
	struct ev t = *a;

	*a = *b;
	*b = t;
}

void pq_push(struct pq *q, uint64_t t, uint64_t seq, void *p)
{
	if (q->n == q->cap) {
		q->cap = q->cap ? 2 * q->cap : 64;
		q->v = realloc(q->v, q->cap * sizeof(*q->v));
		if (!q->v)
			abort();
	}
	size_t i = q->n++;

	q->v[i] = (struct ev){ t, seq, p };
	while (i && ev_before(&q->v[i], &q->v[(i - 1) / 2])) {
		ev_swap(&q->v[i], &q->v[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
}

bool pq_pop(struct pq *q, struct ev *out)
{
	if (!q->n)
		return false;
	*out = q->v[0];
	q->v[0] = q->v[--q->n];
	for (size_t i = 0;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;

		if (l < q->n && ev_before(&q->v[l], &q->v[m]))
			m = l;
		if (r < q->n && ev_before(&q->v[r], &q->v[m]))
			m = r;
		if (m == i)
			break;
		ev_swap(&q->v[i], &q->v[m]);
		i = m;
	}
	return true;
}

uint64_t pq_next(const struct pq *q)
{
	return q->n ? q->v[0].t : UINT64_MAX;
}

void pq_free(struct pq *q)
{
	free(q->v);
	memset(q, 0, sizeof(*q));
}

void fifo_push(struct fifo *f, void *p)
{
	if (f->head + f->n == f->cap) {
		if (f->head) {	/* slide down before growing */
			memmove(f->v, f->v + f->head, f->n * sizeof(*f->v));
			f->head = 0;
		}
		if (f->n == f->cap) {
			f->cap = f->cap ? 2 * f->cap : 16;
			f->v = realloc(f->v, f->cap * sizeof(*f->v));
			if (!f->v)
				abort();
		}
	}
	f->v[f->head + f->n++] = p;
}

void *fifo_peek(const struct fifo *f, size_t i)
{
	return i < f->n ? f->v[f->head + i] : NULL;
}

void *fifo_pop(struct fifo *f)
{
	if (!f->n)
		return NULL;
	f->n--;
	return f->v[f->head++];
}

void fifo_remove(struct fifo *f, size_t i)
{
	if (i >= f->n)
		return;
	memmove(f->v + f->head + i, f->v + f->head + i + 1, (f->n - i - 1) * sizeof(*f->v));
	f->n--;
}

void fifo_free(struct fifo *f)
{
	free(f->v);
	memset(f, 0, sizeof(*f));
}
