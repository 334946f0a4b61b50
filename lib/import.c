/* SPDX-License-Identifier: MIT */
/*
 * import — ibv_import_device(3), ibv_import_pd(3), ibv_import_mr(3) over libodpemu. A
 * context's cmd_fd is its end of the control connection (open.c); the device is the one
 * whose socket that end is connected to, and the import is a connection of its own that
 * the daemon attaches to the same handles (emu/import.c). Imported PDs and MRs are the
 * same daemon objects; unimporting frees only our struct.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "lib_int.h"

ODPEMU_EXPORT int odpemu_context_cmd_fd(struct odpemu_context *context)
{
	struct lib_context *c;

	if (!context) {
		errno = EINVAL;
		return -1;
	}
	c = lib_ctx(context);
	return c->cmd_fd >= 0 ? c->cmd_fd : c->sock;
}

/* Is peer (a connected socket's peer name) the control socket at path? The daemon binds
 * it as "<path>.<pid>" and renames it into place (emu/ctl.c), and a peer name is the
 * name bound. */
static bool is_socket_of(const char *peer, const char *path)
{
	size_t n = strnlen(path, LIB_PATH_LEN);

	return n && !strncmp(peer, path, n) && (peer[n] == '\0' || peer[n] == '.');
}

/* The device whose control socket fd is connected to: 0, -EINVAL (fd is no connected
 * unix socket: libibverbs' answer to an fd that is no character device), -ENODEV (no
 * odpemu device listens there). */
static int device_of(int fd, struct odpemu_device *dev)
{
	struct sockaddr_un sa;
	char peer[sizeof(sa.sun_path) + 1];	/* NUL-terminated (sun_path need not be) */
	socklen_t len = sizeof(sa);
	struct odpemu_device **list;
	struct stat st;
	int rc = -ENODEV;

	memset(&sa, 0, sizeof(sa));
	if (fstat(fd, &st) || !S_ISSOCK(st.st_mode) ||
	    getpeername(fd, (struct sockaddr *)&sa, &len) || sa.sun_family != AF_UNIX ||
	    len <= offsetof(struct sockaddr_un, sun_path) || !sa.sun_path[0])
		return -EINVAL;
	memcpy(peer, sa.sun_path, sizeof(sa.sun_path));
	peer[sizeof(sa.sun_path)] = '\0';
	if (!(list = odpemu_get_device_list(NULL)))
		return -ENODEV;
	for (int i = 0; list[i]; i++)
		if (is_socket_of(peer, list[i]->path)) {
			*dev = *list[i];
			rc = 0;
			break;
		}
	odpemu_free_device_list(list);
	return rc;
}

ODPEMU_EXPORT struct odpemu_context *odpemu_import_device(int cmd_fd)
{
	struct odpemu_device dev;
	int rc = device_of(cmd_fd, &dev);

	if (rc) {
		errno = -rc;
		return NULL;
	}
	return lib_open(&dev, cmd_fd);
}

/* Keep obj in table t under handle unless the handle is there already (a context that
 * imports its own object: the first struct keeps the entry). */
static void table_offer(struct lib_context *c, struct lib_table *t, uint32_t h, void *obj)
{
	pthread_mutex_lock(&c->tab_lock);
	if (!lib_table_find(t, h))
		(void)lib_table_add(t, h, obj);	/* -ENOMEM: no events find it, nothing more */
	pthread_mutex_unlock(&c->tab_lock);
}

/* Take obj out of table t if it is the one there under h. */
static void table_forget(struct lib_context *c, struct lib_table *t, uint32_t h, void *obj)
{
	pthread_mutex_lock(&c->tab_lock);
	if (lib_table_find(t, h) == obj)
		lib_table_remove(t, h);
	pthread_mutex_unlock(&c->tab_lock);
}

ODPEMU_EXPORT struct odpemu_pd *odpemu_import_pd(struct odpemu_context *context,
						 uint32_t handle)
{
	struct ipc_handle_rep rep;
	struct lib_call call = { .op = IPC_IMPORT_PD, .handle = handle, .rep = &rep,
				 .rep_min = sizeof(rep), .rep_cap = sizeof(rep) };
	struct odpemu_pd *pd;
	int rc;

	if (!context) {
		errno = EINVAL;
		return NULL;
	}
	if ((rc = lib_call(lib_ctx(context), &call))) {
		errno = -rc;
		return NULL;
	}
	if (!(pd = calloc(1, sizeof(*pd)))) {
		errno = ENOMEM;
		return NULL;
	}
	pd->context = context;
	pd->handle = handle;
	table_offer(lib_ctx(context), &lib_ctx(context)->pds, handle, pd);
	return pd;
}

ODPEMU_EXPORT void odpemu_unimport_pd(struct odpemu_pd *pd)
{
	if (!pd)
		return;
	table_forget(lib_ctx(pd->context), &lib_ctx(pd->context)->pds, pd->handle, pd);
	free(pd);
}

ODPEMU_EXPORT struct odpemu_mr *odpemu_import_mr(struct odpemu_pd *pd, uint32_t handle)
{
	struct ipc_import_mr_rep rep;
	struct lib_call call = { .op = IPC_IMPORT_MR, .handle = handle, .rep = &rep,
				 .rep_min = sizeof(rep), .rep_cap = sizeof(rep) };
	struct lib_context *c;
	struct lib_mr *mr;
	int rc;

	if (!pd) {
		errno = EINVAL;
		return NULL;
	}
	c = lib_ctx(pd->context);
	if ((rc = lib_call(c, &call))) {
		errno = -rc;
		return NULL;
	}
	if (!(mr = calloc(1, sizeof(*mr)))) {
		errno = ENOMEM;
		return NULL;
	}
	lib_evc_init(&mr->evc);
	mr->pub.context = pd->context;
	mr->pub.pd = pd;
	mr->pub.addr = NULL;	/* ibv_import_mr(3): not applicable (another process's) */
	mr->pub.length = (size_t)rep.len;
	mr->pub.handle = handle;
	mr->pub.lkey = rep.lkey;
	mr->pub.rkey = rep.rkey;
	mr->access = (int)rep.access;
	table_offer(c, &c->mrs, handle, mr);
	return &mr->pub;
}

ODPEMU_EXPORT void odpemu_unimport_mr(struct odpemu_mr *pub)
{
	if (!pub)
		return;
	table_forget(lib_ctx(pub->context), &lib_ctx(pub->context)->mrs, pub->handle, pub);
	lib_mr_free((struct lib_mr *)pub);
}
