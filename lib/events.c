/* SPDX-License-Identifier: MIT */
/* Async events: struct ipc_event records on the session's pipe, turned back into objects
 * through the handle tables. End of file on the pipe means the daemon died: that is
 * reported once as DEVICE_FATAL, then every call fails with EIO. */
#include <unistd.h>

#include "lib_int.h"

enum ev_target { EV_QP, EV_CQ, EV_SRQ, EV_MR, EV_PORT };

static enum ev_target target_of(uint32_t type)
{
	switch (type) {
	case ODPEMU_EVENT_QP_FATAL: case ODPEMU_EVENT_QP_REQ_ERR: case ODPEMU_EVENT_QP_ACCESS_ERR:
	case ODPEMU_EVENT_COMM_EST: case ODPEMU_EVENT_SQ_DRAINED:
	case ODPEMU_EVENT_QP_LAST_WQE_REACHED:
		return EV_QP;
	case ODPEMU_EVENT_CQ_ERR:
		return EV_CQ;
	case ODPEMU_EVENT_SRQ_ERR: case ODPEMU_EVENT_SRQ_LIMIT_REACHED:
		return EV_SRQ;
	case ODPEMU_EVENT_MR_DECOHERENCE:
		return EV_MR;
	default:	/* PORT_*, GID_CHANGE, DEVICE_FATAL, and types newer than us */
		return EV_PORT;
	}
}

static struct lib_evc *evc_of(enum ev_target t, void *obj)
{
	switch (t) {
	case EV_QP: return &((struct lib_qp *)obj)->evc;
	case EV_CQ: return &((struct lib_cq *)obj)->evc;
	case EV_SRQ: return &((struct lib_srq *)obj)->evc;
	case EV_MR: return &((struct lib_mr *)obj)->evc;
	default: return NULL;
	}
}

static struct lib_table *table_of(struct lib_context *c, enum ev_target t)
{
	switch (t) {
	case EV_QP: return &c->qps;
	case EV_CQ: return &c->cqs;
	case EV_SRQ: return &c->srqs;
	default: return &c->mrs;
	}
}

/* The object the event names, counted as handed out; false when it is already gone. */
static bool resolve(struct lib_context *c, const struct ipc_event *ev,
		    struct odpemu_async_event *out)
{
	enum ev_target t = target_of(ev->type);
	void *obj;

	out->event_type = (enum odpemu_event_type)ev->type;
	if (t == EV_PORT) {
		out->element.port_num = (int)ev->handle;
		return true;
	}
	pthread_mutex_lock(&c->tab_lock);
	obj = lib_table_find(table_of(c, t), ev->handle);
	if (obj)
		lib_evc_got(evc_of(t, obj), false);
	if (obj && ev->type == ODPEMU_EVENT_SRQ_LIMIT_REACHED)
		((struct lib_srq *)obj)->attr.srq_limit = 0;	/* the limit disarmed itself */
	pthread_mutex_unlock(&c->tab_lock);
	/* Every library object starts with its public struct. */
	switch (t) {
	case EV_QP: out->element.qp = obj; break;
	case EV_CQ: out->element.cq = obj; break;
	case EV_SRQ: out->element.srq = obj; break;
	default: out->element.mr = obj; break;
	}
	return obj != NULL;
}

static int fatal_once(struct lib_context *c, struct odpemu_async_event *out, uint32_t port)
{
	bool first;

	lib_ctx_mark_dead(c);
	pthread_mutex_lock(&c->ev_lock);
	first = !c->fatal_given;
	c->fatal_given = true;
	pthread_mutex_unlock(&c->ev_lock);
	if (!first)
		return lib_fail(EIO);
	out->event_type = ODPEMU_EVENT_DEVICE_FATAL;
	out->element.port_num = (int)port;
	return 0;
}

ODPEMU_EXPORT int odpemu_get_async_event(struct odpemu_context *context,
					 struct odpemu_async_event *event)
{
	struct lib_context *c;

	if (!context || !event)
		return lib_fail(EINVAL);
	c = lib_ctx(context);
	for (;;) {
		struct ipc_event ev;
		ssize_t n;

		/* A signal ends the wait with EINTR, as in libibverbs: clients that stop on
		 * SIGALRM (qperf) rely on it. */
		n = read(context->async_fd, &ev, sizeof(ev));
		if (n < 0)
			return lib_fail(errno);
		if (n != sizeof(ev))
			return fatal_once(c, event, 0);	/* end of file: the daemon died */
		if (ev.type == ODPEMU_EVENT_DEVICE_FATAL)
			return fatal_once(c, event, ev.handle);
		if (resolve(c, &ev, event))
			return 0;
		/* an event for an object destroyed meanwhile: nobody to tell */
	}
}

/* A leased MR's change waits in the daemon for this acknowledgement (docs/regcache.md). A
 * failure (the daemon died) has nowhere to go: the change then runs after the timeout. */
static void lease_ack(struct lib_mr *mr)
{
	struct lib_call call = { .op = IPC_LEASE_ACK };

	if (!mr || !(mr->access & ODPEMU_ACCESS_LEASE))
		return;
	call.handle = mr->pub.handle;
	(void)lib_call(lib_ctx(mr->pub.context), &call);
}

ODPEMU_EXPORT void odpemu_ack_async_event(struct odpemu_async_event *event)
{
	void *obj;

	if (!event)
		return;
	switch (target_of(event->event_type)) {
	case EV_QP: obj = event->element.qp; break;
	case EV_CQ:
		lib_cq_ack((struct lib_cq *)event->element.cq, false, 1);
		return;
	case EV_SRQ: obj = event->element.srq; break;
	case EV_MR:
		obj = event->element.mr;
		lease_ack((struct lib_mr *)obj);
		break;
	default: return;
	}
	lib_evc_ack(evc_of(target_of(event->event_type), obj), false, 1);
}
