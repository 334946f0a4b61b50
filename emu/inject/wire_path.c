/* SPDX-License-Identifier: MIT */
/*
 * wire — the injector's path (see wire.h): a packet's verdict applied, and the packets
 * that leave later. Delayed packets wait in a min-heap on (due time, arrival), so a fixed
 * delay keeps their order and a spread one reorders them as a real delay line with jitter
 * would; packets held for reordering wait in a short list until enough later packets to
 * their peer have left, or EMU_WIRE_HOLD_NS passed.
 *
 * Re-entry: handing a received packet to nic/ can make nic/ send one at once (an ACK),
 * which comes back through emu_wire_pass for the other direction. So each direction has
 * its own scratch buffer, and every entry leaves the queue or the hold list before the
 * out callback runs.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "wire.h"

struct emu_wire_entry {
	uint64_t due;		/* delay line: when it leaves; held: its deadline */
	uint64_t seq;		/* delay line: equal dues leave in arrival order */
	struct nic_gid peer;
	struct nic_gid to;	/* RX from a multicast group: the group (has_to) */
	uint16_t sport;
	bool has_to;
	uint8_t dir;
	uint8_t copies;
	unsigned left;		/* held: later packets to its peer that still have to pass */
	size_t len;
	uint8_t pkt[];
};

int emu_wire_init(struct emu_wire *w, uint64_t seed, emu_wire_out_fn out, void *out_arg)
{
	memset(w, 0, sizeof(*w));
	emu_wire_rules_init(&w->rules, seed);
	w->out = out;
	w->out_arg = out_arg;
	w->heap = calloc(EMU_WIRE_QUEUE_MAX, sizeof(w->heap[0]));
	return w->heap ? 0 : -ENOMEM;
}

void emu_wire_fini(struct emu_wire *w)
{
	for (unsigned i = 0; i < w->nheap; i++)
		free(w->heap[i]);
	for (unsigned i = 0; i < w->nholds; i++)
		free(w->holds[i]);
	free(w->heap);
	w->heap = NULL;
	w->nheap = w->nholds = 0;
}

static struct emu_wire_entry *entry_new(enum emu_wire_dir dir, const struct nic_gid *peer,
					uint16_t sport, const struct nic_gid *to,
					const uint8_t *pkt, size_t len, unsigned copies)
{
	struct emu_wire_entry *e = malloc(sizeof(*e) + len);

	if (!e)
		return NULL;
	*e = (struct emu_wire_entry){ .peer = *peer, .sport = sport, .dir = (uint8_t)dir,
		.copies = (uint8_t)copies, .len = len, .has_to = to != NULL };
	if (to)
		e->to = *to;
	memcpy(e->pkt, pkt, len);
	return e;
}

static const struct nic_gid *to_of(const struct emu_wire_entry *e)
{
	return e->has_to ? &e->to : NULL;
}

/* ---- the delay line: a binary min-heap ---- */

static bool earlier(const struct emu_wire_entry *a, const struct emu_wire_entry *b)
{
	return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

static void heap_push(struct emu_wire *w, struct emu_wire_entry *e)
{
	unsigned i = w->nheap++;

	while (i && earlier(e, w->heap[(i - 1) / 2])) {
		w->heap[i] = w->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	w->heap[i] = e;
}

static struct emu_wire_entry *heap_pop(struct emu_wire *w)
{
	struct emu_wire_entry *top = w->heap[0], *last = w->heap[--w->nheap];
	unsigned i = 0;

	for (;;) {
		unsigned c = 2 * i + 1;

		if (c >= w->nheap)
			break;
		if (c + 1 < w->nheap && earlier(w->heap[c + 1], w->heap[c]))
			c++;
		if (!earlier(w->heap[c], last))
			break;
		w->heap[i] = w->heap[c];
		i = c;
	}
	if (w->nheap)
		w->heap[i] = last;
	return top;
}

/* ---- leaving ---- */

static void out_copies(struct emu_wire *w, enum emu_wire_dir dir, const struct nic_gid *peer,
		       uint16_t sport, const struct nic_gid *to, const uint8_t *pkt, size_t len,
		       unsigned copies)
{
	for (unsigned c = 0; c < copies; c++)
		w->out(w->out_arg, dir, peer, sport, to, pkt, len);
}

/* Held packets that left the list: out, in the order they were held, then freed. */
static void release(struct emu_wire *w, struct emu_wire_entry **list, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct emu_wire_entry *e = list[i];

		out_copies(w, (enum emu_wire_dir)e->dir, &e->peer, e->sport, to_of(e), e->pkt, e->len,
			   e->copies);
		free(e);
	}
}

/* n packets of dir to or from peer have just left: the held packets they passed. */
static void count_passing(struct emu_wire *w, enum emu_wire_dir dir, const struct nic_gid *peer,
			  unsigned n)
{
	struct emu_wire_entry *done[EMU_WIRE_HOLD_MAX];
	unsigned ndone = 0, keep = 0;

	for (unsigned i = 0; i < w->nholds; i++) {
		struct emu_wire_entry *e = w->holds[i];

		if (e->dir == dir && !memcmp(&e->peer, peer, sizeof(*peer)))
			e->left = e->left > n ? e->left - n : 0;
		if (e->left)
			w->holds[keep++] = e;
		else
			done[ndone++] = e;
	}
	w->nholds = keep;
	release(w, done, ndone);
}

/* A packet leaves now (copies times), then the held packets it passed. */
static void leave(struct emu_wire *w, enum emu_wire_dir dir, const struct nic_gid *peer,
		  uint16_t sport, const struct nic_gid *to, const uint8_t *pkt, size_t len,
		  unsigned copies)
{
	out_copies(w, dir, peer, sport, to, pkt, len, copies);
	if (w->nholds)
		count_passing(w, dir, peer, copies);
}

/* ---- the packet's way ---- */

static bool hold(struct emu_wire *w, enum emu_wire_dir dir, const struct nic_gid *peer,
		 uint16_t sport, const struct nic_gid *to, const uint8_t *pkt, size_t len,
		 unsigned copies,
		 unsigned depth, uint64_t now)
{
	struct emu_wire_entry *e;

	if (w->nholds == EMU_WIRE_HOLD_MAX || !(e = entry_new(dir, peer, sport, to, pkt, len, copies)))
		return false;
	e->left = depth;
	e->due = now + EMU_WIRE_HOLD_NS;
	w->holds[w->nholds++] = e;
	return true;
}

static bool delay(struct emu_wire *w, enum emu_wire_dir dir, const struct nic_gid *peer,
		  uint16_t sport, const struct nic_gid *to, const uint8_t *pkt, size_t len,
		  unsigned copies, uint64_t due)
{
	struct emu_wire_entry *e;

	if (w->nheap == EMU_WIRE_QUEUE_MAX || !(e = entry_new(dir, peer, sport, to, pkt, len, copies)))
		return false;
	e->due = due;
	e->seq = w->seq++;
	heap_push(w, e);
	return true;
}

void emu_wire_pass(struct emu_wire *w, enum emu_wire_dir dir, const struct nic_gid *peer,
		   uint16_t sport, const struct nic_gid *to, const uint8_t *pkt, size_t len, uint64_t now)
{
	struct emu_wire_verdict v;

	emu_wire_decide(&w->rules, dir, peer, pkt, len, now, &v);
	w->st.matched += v.matched;
	if (v.drop) {
		w->st.dropped++;
		return;
	}
	if (len > EMU_WIRE_PKT_MAX) {	/* never: both paths carry smaller packets */
		leave(w, dir, peer, sport, to, pkt, len, 1);
		return;
	}
	if (v.corrupt_bit >= 0 || v.copies > 1) {
		/* Our copy: the caller's may be the socket's batch slot, which a flush re-seals
		 * for its IPv4 Identification (udp_tx.c), or a receive buffer we must not touch. */
		memcpy(w->scratch[dir], pkt, len);
		pkt = w->scratch[dir];
		if (v.corrupt_bit >= 0)
			w->scratch[dir][v.corrupt_bit / 8] ^= (uint8_t)(1u << v.corrupt_bit % 8);
	}
	if (v.hold && hold(w, dir, peer, sport, to, pkt, len, v.copies, v.hold, now)) {
		w->st.reordered++;
	} else if (v.delay) {	/* (no room to hold it: it goes on in order) */
		if (!delay(w, dir, peer, sport, to, pkt, len, v.copies, now + v.delay_ns)) {
			w->st.overflow++;
			return;
		}
		w->st.delayed++;
	} else {
		leave(w, dir, peer, sport, to, pkt, len, v.copies);
	}
	/* counted once the packet is on its way, so that drop_icrc at the receiver adds up */
	if (v.corrupt_bit >= 0)
		w->st.corrupted += v.copies;
	w->st.duplicated += v.copies - 1;
}

unsigned emu_wire_tick(struct emu_wire *w, uint64_t now)
{
	struct emu_wire_entry *done[EMU_WIRE_HOLD_MAX];
	unsigned n = 0, ndone = 0, keep = 0, budget = w->nheap;

	/* Bounded by what waited on entry: a packet a release makes nic/ send with a zero
	 * delay is due now too, and waits for the next tick. */
	while (budget-- && w->nheap && w->heap[0]->due <= now) {
		struct emu_wire_entry *e = heap_pop(w);

		leave(w, (enum emu_wire_dir)e->dir, &e->peer, e->sport, to_of(e), e->pkt, e->len,
		      e->copies);
		free(e);
		n++;
	}
	for (unsigned i = 0; i < w->nholds; i++) {
		if (w->holds[i]->due <= now)
			done[ndone++] = w->holds[i];
		else
			w->holds[keep++] = w->holds[i];
	}
	w->nholds = keep;
	release(w, done, ndone);
	return n + ndone;
}

uint64_t emu_wire_next_due(const struct emu_wire *w)
{
	uint64_t t = w->nheap ? w->heap[0]->due : UINT64_MAX;

	for (unsigned i = 0; i < w->nholds; i++)
		if (w->holds[i]->due < t)
			t = w->holds[i]->due;
	return t;
}
