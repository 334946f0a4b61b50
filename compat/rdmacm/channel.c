/* SPDX-License-Identifier: MIT */
/* channel — rdma_event_channel and its events: an epoll fd over the library's own
 * events (a pipe) and each device's odpemu CM channel; rdma_get_cm_event takes the
 * library's first, then the devices', translating each daemon event (conn.c). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "cma.h"

struct cma_channel *cma_chan(struct rdma_event_channel *ch)
{
	return (struct cma_channel *)ch;
}

struct cma_event *cma_event_new(void)
{
	return calloc(1, sizeof(struct cma_event));
}

static int watch(int epfd, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

/* The kernel's event channel is one open of /dev/infiniband/rdma_cm, and a listen or a
 * connect on it is one system call. Here each device's daemon needs a channel of its own:
 * opened now for every device rather than at the first listen or connect, so those
 * stay one round trip (a listen on any address takes every device, a connect one of them:
 * a device of another host, listed through a shared run directory, costs one idle
 * channel). It matters to programs that race their peer: perftest -R's server
 * listens right after a handshake whose end its client sees first, and the client's
 * connect must not overtake that listen (it would be rejected, no listener, as on a kernel
 * whose server were that late). A device whose channel fails here is tried again, and its
 * error reported, where it is used. */
static void open_local_channels(struct cma_channel *c)
{
	for (int i = 0; i < cma_devices(); i++)
		(void)cma_channel_for(c, i);
}

CMA_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct cma_channel *c = calloc(1, sizeof(*c));

	if (!c)
		return errno = ENOMEM, NULL;
	if (cma_devices() < 0) {	/* errno ENODEV: no odpemu device (no daemon) */
		free(c);
		return NULL;
	}
	c->ch.fd = epoll_create1(EPOLL_CLOEXEC);
	if (c->ch.fd < 0 || pipe2(c->pipe, O_CLOEXEC | O_NONBLOCK) || watch(c->ch.fd, c->pipe[0])) {
		int err = errno;

		if (c->ch.fd >= 0)
			close(c->ch.fd);
		free(c);
		return errno = err, NULL;
	}
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->parked, NULL);
	open_local_channels(c);
	return &c->ch;
}

/* Programs destroy a channel while another of their threads waits in rdma_get_cm_event on
 * it (rping and cmtime do, at exit). On a kernel channel that thread stays blocked (closing
 * an fd does not end a call already waiting on it) and the program exits around it; here
 * too: the waiter parks for good, and the channel stays allocated for it. */
CMA_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *ch)
{
	struct cma_channel *c = cma_chan(ch);
	bool parked;

	if (!ch)
		return;
	pthread_mutex_lock(&c->lock);
	c->closing = true;
	parked = c->waiters > 0;
	for (int i = 0; i < CMA_MAX_DEVS; i++)
		if (c->dev_ch[i]) {
			odpemu_cm_destroy_channel(c->dev_ch[i]);
			c->dev_ch[i] = NULL;
		}
	while (c->head) {
		struct cma_event *e = c->head;

		c->head = e->next;
		free(e);
	}
	c->tail = NULL;
	pthread_mutex_unlock(&c->lock);
	if (parked)
		return;
	close(c->pipe[0]);
	close(c->pipe[1]);
	close(c->ch.fd);
	pthread_cond_destroy(&c->parked);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

struct odpemu_cm_channel *cma_channel_for(struct cma_channel *c, int dev)
{
	struct cma_dev *d = cma_dev(dev);
	struct odpemu_cm_channel *och;

	if (!d)
		return errno = ENODEV, NULL;
	pthread_mutex_lock(&c->lock);
	if (!(och = c->dev_ch[dev]) &&
	    (och = odpemu_cm_create_channel(odpemu_compat_context(d->verbs)))) {
		fcntl(och->fd, F_SETFL, fcntl(och->fd, F_GETFL) | O_NONBLOCK);
		if (watch(c->ch.fd, och->fd)) {
			odpemu_cm_destroy_channel(och);
			och = NULL;
		} else {
			c->dev_ch[dev] = och;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return och;
}

void cma_queue_locked(struct cma_channel *c, struct cma_event *e)
{
	if (c->tail)
		c->tail->next = e;
	else
		c->head = e;
	c->tail = e;
	(void)!write(c->pipe[1], "e", 1);
}

void cma_queue(struct cma_channel *c, struct cma_event *e)
{
	pthread_mutex_lock(&c->lock);
	cma_queue_locked(c, e);
	pthread_mutex_unlock(&c->lock);
}

/* The oldest event the library made, if any. Called with c->lock. */
static struct cma_event *pop_local(struct cma_channel *c)
{
	struct cma_event *e = c->head;
	char b;

	if (!e)
		return NULL;
	c->head = e->next;
	if (!c->head)
		c->tail = NULL;
	e->next = NULL;
	(void)!read(c->pipe[0], &b, 1);
	return e;
}

/* One event from a device's daemon, translated; NULL if none came (or it was consumed).
 * Called with c->lock. */
static struct cma_event *pop_device(struct cma_channel *c, int dev, bool *any)
{
	struct odpemu_cm_event ev;

	if (!c->dev_ch[dev])
		return NULL;
	if (odpemu_cm_get_event(c->dev_ch[dev], &ev)) {
		if (errno != ENODEV)
			return NULL;
		epoll_ctl(c->ch.fd, EPOLL_CTL_DEL, c->dev_ch[dev]->fd, NULL);
		odpemu_cm_destroy_channel(c->dev_ch[dev]);
		c->dev_ch[dev] = NULL;
		cma_device_removed(c, dev);
		*any = true;
		return NULL;
	}
	*any = true;
	return cma_translate(c, dev, &ev);
}

static struct cma_event *next_event(struct cma_channel *c)
{
	struct cma_event *e;
	bool any;

	pthread_mutex_lock(&c->lock);
	do {
		any = false;
		if (c->closing)
			break;
		if ((e = pop_local(c)))
			break;
		for (int i = 0; i < CMA_MAX_DEVS && !e; i++)
			e = pop_device(c, i, &any);
	} while (!e && any);
	pthread_mutex_unlock(&c->lock);
	return e;
}

static int wait_event(struct cma_channel *c, bool nonblock, struct rdma_cm_event **event)
{
	for (;;) {
		struct cma_event *e = next_event(c);
		struct epoll_event ev;

		if (e) {
			*event = &e->ev;
			return 0;
		}
		if (nonblock)
			return errno = EAGAIN, -1;
		pthread_mutex_lock(&c->lock);
		while (c->closing)	/* destroyed under us: blocked for good (see above) */
			pthread_cond_wait(&c->parked, &c->lock);
		pthread_mutex_unlock(&c->lock);
		if (epoll_wait(c->ch.fd, &ev, 1, -1) < 0 && errno != EINTR)
			return -1;
	}
}

CMA_EXPORT int rdma_get_cm_event(struct rdma_event_channel *ch, struct rdma_cm_event **event)
{
	struct cma_channel *c = cma_chan(ch);
	bool nonblock;

	int rc;

	if (!ch || !event)
		return errno = EINVAL, -1;
	nonblock = fcntl(ch->fd, F_GETFL) & O_NONBLOCK;
	pthread_mutex_lock(&c->lock);
	c->waiters++;
	pthread_mutex_unlock(&c->lock);
	rc = wait_event(c, nonblock, event);
	pthread_mutex_lock(&c->lock);
	c->waiters--;
	pthread_mutex_unlock(&c->lock);
	return rc;
}

CMA_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct cma_event *e = (struct cma_event *)event;
	struct cma_id *id;

	if (!event)
		return errno = EINVAL, -1;
	pthread_mutex_lock(&cma_lock);
	/* CONNECT_REQUEST counts against the listener (a new ID is the client's at once) */
	id = cma_id(event->listen_id ? event->listen_id : event->id);
	if (id && id->unacked && !--id->unacked)
		pthread_cond_broadcast(&id->acked);
	pthread_mutex_unlock(&cma_lock);
	free(e);
	return 0;
}
