/* SPDX-License-Identifier: MIT */
/*
 * A CQ overflows exactly at the size it was granted (odpemu_cq.cqe, ibv_cq.cqe), as on
 * hardware and rxe: nic/ writes each completion straight into the application's ring
 * (ports.cq_write), so there is no second buffer to absorb more. For each size asked: as
 * many signaled WRITEs as granted complete, none is lost and no CQ_ERR comes; one more
 * raises CQ_ERR (IBA 11.4.2.1) and the granted completions are all still there to poll.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "t.h"

#define ACCESS (ODPEMU_ACCESS_LOCAL_WRITE | ODPEMU_ACCESS_REMOTE_WRITE)


static void nap_ms(int ms)
{
	nanosleep(&(struct timespec){ ms / 1000, (ms % 1000) * 1000000L }, NULL);
}

/* A CQ_ERR naming cq within timeout_ms (other events are acknowledged and skipped). */
static bool cq_err(struct odpemu_context *c, struct odpemu_cq *cq, int timeout_ms)
{
	struct pollfd p = { .fd = c->async_fd, .events = POLLIN };
	struct odpemu_async_event ev;

	while (poll(&p, 1, timeout_ms) == 1) {
		if (odpemu_get_async_event(c, &ev))
			return false;
		odpemu_ack_async_event(&ev);
		if (ev.event_type == ODPEMU_EVENT_CQ_ERR && ev.element.cq == cq)
			return true;
	}
	return false;
}

static int post_write(struct h_side *s, struct odpemu_mr *mr, uint8_t *buf, uint64_t raddr,
		      uint32_t rkey, uint64_t id)
{
	struct odpemu_sge sge = { (uintptr_t)buf, 8, mr->lkey };
	struct odpemu_send_wr wr = { .wr_id = id, .opcode = ODPEMU_WR_RDMA_WRITE, .sg_list = &sge,
		.num_sge = 1, .send_flags = ODPEMU_SEND_SIGNALED, .wr.rdma = { raddr, rkey } }, *bad;

	return odpemu_post_send(s->qp, &wr, &bad);
}

static void one_size(struct h_env *e, int asked)
{
	struct h_side a = { .ctx = h_open(e, 0) }, b = { .ctx = h_open(e, 1) };
	struct h_qp_opts o;
	struct odpemu_qp_init_attr qi = { .qp_type = ODPEMU_QPT_RC,
		.cap = { .max_send_wr = 512, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 } };
	uint8_t *src = h_cold(4096), *dst = h_cold(65536);
	struct odpemu_mr *smr, *dmr;
	struct odpemu_wc wc[64];
	int granted, got = 0;

	h_qp_opts_default(&o);
	a.pd = odpemu_alloc_pd(a.ctx);
	a.cq = odpemu_create_cq(a.ctx, asked, NULL, NULL, 0);
	qi.send_cq = qi.recv_cq = a.cq;
	if (!a.pd || !a.cq || !(a.qp = odpemu_create_qp(a.pd, &qi)) ||
	    odpemu_query_gid(a.ctx, 1, 0, &a.gid) || h_side_up(&b, &o) ||
	    h_side_connect(&a, b.qp->qp_num, &b.gid, &o) ||
	    h_side_connect(&b, a.qp->qp_num, &a.gid, &o)) {
		T_CHECK(0, "cqe %d: setup: %m", asked);
		return;
	}
	granted = a.cq->cqe;
	T_CHECK(granted >= asked && granted < 2 * asked + 1, "cqe %d granted %d", asked, granted);
	smr = odpemu_reg_mr(a.pd, src, 4096, ACCESS);
	dmr = odpemu_reg_mr(b.pd, dst, 65536, ACCESS);
	for (int i = 0; i < granted; i++)
		T_EQ(post_write(&a, smr, src, (uintptr_t)dst + 8u * (unsigned)i, dmr->rkey,
				(uint64_t)i), 0, "post");
	nap_ms(300);	/* all of them complete: the ring is exactly full */
	T_CHECK(!cq_err(a.ctx, a.cq, 0), "cqe %d: %d completions fit, no CQ_ERR", asked, granted);
	T_EQ(post_write(&a, smr, src, (uintptr_t)dst, dmr->rkey, 999), 0, "one more");
	T_CHECK(cq_err(a.ctx, a.cq, 5000), "cqe %d: completion %d overflows: CQ_ERR", asked,
		granted + 1);
	for (int n; got < granted && (n = odpemu_poll_cq(a.cq, 64, wc)) > 0; got += n)
		for (int i = 0; i < n; i++)
			T_CHECK(wc[i].wr_id == (uint64_t)(got + i) && wc[i].status == ODPEMU_WC_SUCCESS,
				"completion %d intact", got + i);
	T_EQ(got, granted, "every completion that fitted is there");
	odpemu_close_device(a.ctx);
	odpemu_close_device(b.ctx);
}

/* Each size on its own devices, opened and closed by one_size. */
static void every_size(struct h_env *e)
{
	static const int sizes[] = { 1, 5, 64, 100 };

	for (unsigned i = 0; i < T_ARRAY_SIZE(sizes); i++)
		one_size(e, sizes[i]);
}

int main(int argc, char **argv)
{
	static const struct h_test t = { .name = "e2e-cq-overflow", .watchdog_s = 180,
		.open = H_OPEN_NONE, .body = every_size };

	return h_main(argc, argv, &t);
}
