/* SPDX-License-Identifier: MIT */
/* Completion channels: a pipe the daemon writes one struct ipc_cq_event into per fired
 * notification. The application polls channel->fd and calls odpemu_get_cq_event. */
#include <stdlib.h>
#include <unistd.h>

#include "lib_int.h"

void lib_channel_free(struct odpemu_comp_channel *ch)
{
	if (ch->fd >= 0)
		close(ch->fd);
	free(ch);
}

ODPEMU_EXPORT struct odpemu_comp_channel *odpemu_create_comp_channel(struct odpemu_context *context)
{
	struct ipc_handle_rep rep;
	int fd;
	struct lib_call call = { .op = IPC_CREATE_CHANNEL, .rep = &rep, .rep_min = sizeof(rep),
				 .rep_cap = sizeof(rep), .rfds = &fd, .nrfds = 1 };
	struct odpemu_comp_channel *ch;
	struct lib_context *c;
	int rc;

	if (!context) {
		errno = EINVAL;
		return NULL;
	}
	c = lib_ctx(context);
	ch = calloc(1, sizeof(*ch));
	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	ch->fd = -1;
	rc = lib_call(c, &call);
	if (!rc) {
		ch->context = context;
		ch->fd = fd;
		ch->handle = rep.handle;
		pthread_mutex_lock(&c->tab_lock);
		rc = lib_table_add(&c->channels, ch->handle, ch);
		pthread_mutex_unlock(&c->tab_lock);
		if (rc)
			lib_call_destroy(c, IPC_DESTROY_CHANNEL, rep.handle);
	}
	if (rc) {
		lib_channel_free(ch);
		errno = -rc;
		return NULL;
	}
	return ch;
}

ODPEMU_EXPORT int odpemu_destroy_comp_channel(struct odpemu_comp_channel *ch)
{
	struct lib_context *c;
	bool busy;
	int rc;

	if (!ch)
		return lib_fail(EINVAL);
	c = lib_ctx(ch->context);
	pthread_mutex_lock(&c->tab_lock);
	busy = ch->refcnt > 0;
	pthread_mutex_unlock(&c->tab_lock);
	if (busy) {
		lib_set_error(c, "destroy_comp_channel: %d CQs still use it: destroy them first",
			      ch->refcnt);
		return lib_fail(EBUSY);
	}
	rc = lib_destroy_handle(c, IPC_DESTROY_CHANNEL, &c->channels, ch->handle);
	if (rc)
		return lib_fail(-rc);
	lib_channel_free(ch);
	return 0;
}
