/* SPDX-License-Identifier: MIT */
/*
 * Every verb end to end between two daemons: SEND/RECV (+imm), WRITE (+imm), READ, CAS,
 * FAA, FLUSH, ATOMIC_WRITE on pinned, explicit-ODP and implicit-ODP MRs, both fault
 * policies, message sizes 0 B to 16 MiB, every byte checked. ODP buffers are fresh
 * mappings, so page faults really happen: the responder's page_faults counter must grow.
 * e2e-verbs-drop runs it all with 2 % of each host's RoCEv2 output dropped at random.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "harness.h"
#include "ops.h"
#include "t.h"

enum kind { PINNED, ODP, IMPLICIT };
static const char *const kind_name[] = { "pinned", "odp", "implicit" };

#define BUF (16u << 20)

static struct odpemu_mr *reg(struct odpemu_pd *pd, void *buf, enum kind k)
{
	int acc = ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE |
		  ODPEMU_ACCESS_REMOTE_READ | ODPEMU_ACCESS_REMOTE_ATOMIC |
		  ODPEMU_ACCESS_FLUSH_GLOBAL | ODPEMU_ACCESS_FLUSH_PERSISTENT;
	struct odpemu_mr *mr;

	if (k == IMPLICIT)
		mr = odpemu_reg_mr(pd, NULL, SIZE_MAX, acc | ODPEMU_ACCESS_ON_DEMAND);
	else
		mr = odpemu_reg_mr(pd, buf, BUF, acc | (k == ODP ? ODPEMU_ACCESS_ON_DEMAND : 0));
	T_CHECK(mr != NULL, "reg_mr %s: %m", kind_name[k]);
	return mr;
}

static void one_combo(struct h_env *e, struct odpemu_context **ctx, enum kind k,
		      enum odpemu_fault_policy pol, const uint32_t *sizes, unsigned nsizes)
{
	struct h_qp_opts o;
	struct h_pair p = { 0 };
	struct h_mem a = { h_cold(BUF), NULL }, b = { h_cold(BUF), NULL };
	unsigned long long faults0, faults1;
	char tag[64];

	h_qp_opts_default(&o);
	o.policy = pol;
	p.s[0].ctx = ctx[0];
	p.s[1].ctx = ctx[1];
	if (h_pair_up(e, &p, &o)) {
		T_CHECK(0, "pair up");
		return;
	}
	a.mr = reg(p.s[0].pd, a.buf, k);
	b.mr = reg(p.s[1].pd, b.buf, k);
	if (!a.mr || !b.mr)
		return;
	faults0 = h_counter(ctx[1], ODPEMU_COUNTERS_DEVICE, 0, "page_faults");
	snprintf(tag, sizeof(tag), "%s/%s", kind_name[k], odpemu_fault_policy_str(pol));
	for (unsigned i = 0; i < nsizes; i++)
		h_data_ops(&p, &a, &b, sizes[i], tag, &e->rng);
	h_atomic_ops(&p, &a, &b, tag);
	faults1 = h_counter(ctx[1], ODPEMU_COUNTERS_DEVICE, 0, "page_faults");
	if (k != PINNED)
		T_CHECK(faults1 > faults0 && faults1 != ~0ull, "%s: responder page_faults %llu -> "
			"%llu: no fault on a cold ODP buffer", tag, faults0, faults1);
	else
		T_EQ(faults1, faults0, "pinned MRs take no page faults");
	printf("%-16s page faults on the responder: %llu\n", tag, faults1 - faults0);
	odpemu_dereg_mr(a.mr);
	odpemu_dereg_mr(b.mr);
	h_pair_down(&p);
	munmap(a.buf, BUF + 4096);
	munmap(b.buf, BUF + 4096);
}

static void every_combo(struct h_env *e)
{
	static const uint32_t all[] = { 0, 1, 63, 4096, 4097, 65536, 1u << 20, 16u << 20 };
	static const uint32_t few[] = { 0, 8, 4096, 65536 + 100 };

	for (enum kind k = PINNED; k <= IMPLICIT; k++) {
		one_combo(e, e->ctx, k, ODPEMU_FAULT_POLICY_STALL, all, T_ARRAY_SIZE(all));
		one_combo(e, e->ctx, k, ODPEMU_FAULT_POLICY_RNR, few, T_ARRAY_SIZE(few));
	}
	if (e->drop_pct) {	/* e2e-verbs-drop: every byte above arrived through real loss */
		unsigned long long dropped = h_dropped(e);

		printf("random drop: %llu packets dropped on the hosts' outputs\n", dropped);
		T_CHECK(dropped > 0, "the random drop dropped nothing");
	}
	if (e->dup_pct) {	/* ... and through late duplicates */
		unsigned long long dup = h_duplicated(e);

		printf("random duplication: %llu packets sent twice by the hosts\n", dup);
		T_CHECK(dup > 0, "the random duplication duplicated nothing");
	}
}

int main(int argc, char **argv)
{
	static const struct h_test t = { .name = "emu-verbs", .seed = 5, .watchdog_s = 600,
		.open = H_OPEN_BOTH, .body = every_combo };

	return h_main(argc, argv, &t);
}
