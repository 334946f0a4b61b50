/* SPDX-License-Identifier: MIT */
/* Completion-channel and async events read from pipes written here as the daemon would:
 * handles back to objects, events of destroyed objects skipped, end of file as device
 * death, and the acknowledgement counts destroy waits for. */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "t_lib.h"

static struct lib_cq *add_cq(struct lib_context *c, uint32_t handle, struct odpemu_comp_channel *ch)
{
	uint32_t len = ipc_ring_bytes(4, ipc_cq_slot());
	void *map = t_memfd_map(len);
	struct lib_cq *cq = calloc(1, sizeof(*cq));

	ipc_ring_init(map, 0, 4, ipc_cq_slot());
	if (lib_cq_attach(cq, map, len))
		abort();
	cq->pub.context = &c->pub;
	cq->pub.channel = ch;
	cq->pub.handle = handle;
	cq->pub.cq_context = (void *)(uintptr_t)(0x1000 + handle);
	lib_table_add(&c->cqs, handle, cq);
	return cq;
}

static void put(int fd, const void *p, size_t n)
{
	if (write(fd, p, n) != (ssize_t)n)
		abort();
}

static void test_cq_events(void)
{
	struct lib_context *c = t_ctx_new(false);
	struct odpemu_comp_channel *ch = calloc(1, sizeof(*ch));
	int p[2];
	struct lib_cq *cq;
	struct odpemu_cq *got = NULL;
	void *ctx = NULL;
	struct ipc_cq_event ev[3] = { { .cq = 99 }, { .cq = 5 }, { .cq = 5 } };

	T_CHECK(!pipe2(p, O_CLOEXEC), "pipe");
	ch->context = &c->pub;
	ch->fd = p[0];
	lib_table_add(&c->channels, 1, ch);
	cq = add_cq(c, 5, ch);
	put(p[1], ev, sizeof(ev));
	T_EQ(odpemu_get_cq_event(ch, &got, &ctx), 0, "event (an unknown handle skipped)");
	T_CHECK(got == &cq->pub, "the CQ");
	T_CHECK(ctx == (void *)0x1005, "its cq_context");
	T_EQ(odpemu_get_cq_event(ch, &got, &ctx), 0, "second event");
	T_EQ(cq->evc.comp_got, 2, "two handed out");
	odpemu_ack_cq_events(&cq->pub, 2);
	T_EQ(cq->pub.comp_events_completed, 2, "public count");
	lib_evc_wait(&cq->evc);	/* returns at once: all acknowledged */
	fcntl(p[0], F_SETFL, O_NONBLOCK);
	T_EQ(odpemu_get_cq_event(ch, &got, &ctx), EAGAIN, "non-blocking, empty");
	close(p[1]);
	T_EQ(odpemu_get_cq_event(ch, &got, &ctx), EIO, "EOF: the daemon died");
	t_ctx_free(c);	/* frees the CQ and the channel (closing p[0]) left in the tables */
}

static void test_async(void)
{
	struct lib_context *c = t_ctx_new(false);
	struct lib_qp *qp = calloc(1, sizeof(*qp));
	struct lib_mr *mr = calloc(1, sizeof(*mr));
	struct lib_cq *cq = add_cq(c, 3, NULL);
	struct odpemu_async_event e;
	int p[2];
	struct ipc_event ev[] = {
		{ ODPEMU_EVENT_QP_FATAL, 7 }, { ODPEMU_EVENT_SRQ_LIMIT_REACHED, 1 },
		{ ODPEMU_EVENT_PORT_ACTIVE, 1 }, { ODPEMU_EVENT_MR_DECOHERENCE, 4 },
		{ ODPEMU_EVENT_CQ_ERR, 3 },
	};

	T_CHECK(!pipe2(p, O_CLOEXEC), "pipe");
	c->pub.async_fd = p[0];
	lib_evc_init(&qp->evc);
	lib_evc_init(&mr->evc);
	lib_table_add(&c->qps, 7, qp);
	lib_table_add(&c->mrs, 4, mr);
	put(p[1], ev, sizeof(ev));
	T_EQ(odpemu_get_async_event(&c->pub, &e), 0, "QP event");
	T_EQ(e.event_type, ODPEMU_EVENT_QP_FATAL, "type");
	T_CHECK(e.element.qp == &qp->pub, "the QP");
	T_EQ(qp->evc.async_got, 1, "counted");
	odpemu_ack_async_event(&e);
	T_EQ(qp->evc.async_acked, 1, "acked");
	T_EQ(odpemu_get_async_event(&c->pub, &e), 0, "port event (unknown SRQ skipped)");
	T_EQ(e.event_type, ODPEMU_EVENT_PORT_ACTIVE, "type");
	T_EQ(e.element.port_num, 1, "port");
	odpemu_ack_async_event(&e);
	T_EQ(odpemu_get_async_event(&c->pub, &e), 0, "MR event");
	T_CHECK(e.element.mr == &mr->pub, "the MR");
	odpemu_ack_async_event(&e);
	T_EQ(mr->evc.async_acked, 1, "MR acked");
	T_EQ(odpemu_get_async_event(&c->pub, &e), 0, "CQ event");
	T_CHECK(e.element.cq == &cq->pub, "the CQ");
	odpemu_ack_async_event(&e);
	T_EQ(cq->pub.async_events_completed, 1, "CQ public async count");
	{
		struct lib_srq *srq = calloc(1, sizeof(*srq));
		struct ipc_event lim = { ODPEMU_EVENT_SRQ_LIMIT_REACHED, 6 };
		struct odpemu_srq_attr a;

		srq->pub.context = &c->pub;
		srq->attr = (struct odpemu_srq_attr){ 16, 1, 5 };
		lib_evc_init(&srq->evc);
		lib_table_add(&c->srqs, 6, srq);
		put(p[1], &lim, sizeof(lim));
		T_EQ(odpemu_get_async_event(&c->pub, &e), 0, "SRQ limit event");
		T_CHECK(e.element.srq == &srq->pub, "the SRQ");
		odpemu_ack_async_event(&e);
		T_EQ(odpemu_query_srq(&srq->pub, &a), 0, "query_srq");
		T_EQ(a.srq_limit, 0, "the limit disarmed when it fired");
		T_EQ(a.max_wr, 16, "max_wr");
	}
	close(p[1]);
	T_EQ(odpemu_get_async_event(&c->pub, &e), 0, "EOF: once");
	T_EQ(e.event_type, ODPEMU_EVENT_DEVICE_FATAL, "DEVICE_FATAL");
	T_CHECK(lib_ctx_dead(c), "context dead");
	T_EQ(odpemu_get_async_event(&c->pub, &e), EIO, "then EIO");
	close(p[0]);
	c->pub.async_fd = -1;
	t_ctx_free(c);
}

static void *ack_later(void *arg)
{
	struct timespec d = { 0, 50 * 1000 * 1000 };

	nanosleep(&d, NULL);
	lib_evc_ack(arg, false, 1);
	return NULL;
}

static void test_evc_wait(void)
{
	struct lib_evc e;
	pthread_t t;

	lib_evc_init(&e);
	lib_evc_got(&e, false);
	pthread_create(&t, NULL, ack_later, &e);
	lib_evc_wait(&e);	/* a destroy waiting for the application's ack */
	T_EQ(e.async_acked, 1, "waited for the ack");
	pthread_join(t, NULL);
	lib_evc_fini(&e);
}

int main(void)
{
	test_cq_events();
	test_async();
	test_evc_wait();
	return t_done("events");
}
