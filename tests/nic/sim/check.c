/* SPDX-License-Identifier: MIT */
/* Invariants that are not about one WR: the first broken invariant stops the run and is
 * what gets printed; the whole host memory equals the model's expectation at every quiet
 * point; every object is gone at teardown. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sim.h"

void sim_fail(struct sim *s, const char *fmt, ...)
{
	va_list ap;

	if (s->failed)
		return;	/* the first broken invariant is the one that matters */
	s->failed = true;
	va_start(ap, fmt);
	vsnprintf(s->why, sizeof(s->why), fmt, ap);
	va_end(ap);
	if (!s->verbose)
		return;
	fprintf(stderr, "[%" PRIu64 " ns] FAIL: %s\n", s->now, s->why);
	for (unsigned i = 0; i < s->cfg.nnics; i++) {
		struct nic_counters c;

		if (!s->nics[i].nic)
			continue;
		nic_counters(s->nics[i].nic, &c);
		fprintf(stderr, "  nic%u: sent %" PRIu64 " received %" PRIu64 " faults %" PRIu64 " (failed %" PRIu64 ") drops:",
			i, c.pkts_sent, c.pkts_received, c.faults_raised, c.faults_failed);
		for (unsigned d = 0; d < NIC_DROP__COUNT; d++)
			if (c.drops[d])
				fprintf(stderr, " %s %" PRIu64, nic_drop_reason_str(d), c.drops[d]);
		fputc('\n', stderr);
	}
}

void sim_trace(struct sim *s, const char *fmt, ...)
{
	va_list ap;

	if (s->verbose < 2)
		return;
	fprintf(stderr, "[%" PRIu64 " ns] ", s->now);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

unsigned status_bit(enum odpemu_wc_status st)
{
	return (unsigned)st < 32 ? 1u << st : 0;
}

const char *status_set_str(unsigned set, char *buf, size_t cap)
{
	size_t len = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < 32 && len + 1 < cap; i++)
		if (set & (1u << i))
			len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? "|" : "",
					odpemu_wc_status_str((enum odpemu_wc_status)i));
	if (!len)
		snprintf(buf, cap, "(none)");
	return buf;
}

/* Every frame (current mappings and pinned orphans) against the model, byte by byte where
 * the model knows the bytes: this catches writes that landed where no WR pointed, late
 * duplicates, and stale data. */
static bool frame_ok(struct sim *s, struct host *h, const struct frame *f, uint64_t va)
{
	if (!memcmp(f->data, f->expect, SIM_PAGE))
		return true;	/* the common case: no need to look at which bytes are known */
	for (size_t i = 0; i < SIM_PAGE; i++)
		if (!(f->unknown[i / 8] & (1u << (i % 8))) && f->data[i] != f->expect[i]) {
			sim_fail(s, "memory check: client %u va 0x%" PRIx64 " gen %u: byte 0x%02x, model expects 0x%02x (landed where no WR pointed, or stale)",
				 h->client, va + i, f->gen, f->data[i], f->expect[i]);
			return false;
		}
	return true;
}

bool check_all_memory(struct sim *s)
{
	for (unsigned c = 0; c < s->cfg.nclients; c++) {
		struct host *h = &s->clients[c].mem;

		for (uint64_t i = 0; i < SIM_ARENA_PAGES; i++) {
			const struct page *p = &h->pages[i];
			uint64_t va = h->base + i * SIM_PAGE;

			if (p->cur && !frame_ok(s, h, p->cur, va))
				return false;
			for (const struct frame *f = p->old; f; f = f->older)
				if (!frame_ok(s, h, f, va))
					return false;
		}
	}
	return true;
}

bool check_teardown(struct sim *s)
{
	for (unsigned i = 0; i < s->cfg.nnics; i++) {
		struct nic_counters c;
		int rc;

		if (!s->nics[i].nic)
			continue;
		nic_counters(s->nics[i].nic, &c);
		if (c.pds || c.mrs || c.cqs || c.srqs || c.qps) {
			sim_fail(s, "teardown: nic%u still counts pds %u mrs %u cqs %u srqs %u qps %u",
				 i, c.pds, c.mrs, c.cqs, c.srqs, c.qps);
			return false;
		}
		rc = nic_destroy(s->nics[i].nic);
		s->nics[i].nic = NULL;
		if (rc) {
			sim_fail(s, "teardown: nic_destroy(nic%u) returned %d", i, rc);
			return false;
		}
	}
	return true;
}
