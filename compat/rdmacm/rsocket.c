/* SPDX-License-Identifier: MIT */
/*
 * The rsocket calls of <rdma/rsocket.h>: present, because librdmacm.so.1 exports them at
 * RDMACM_1.0 and clients import them (rping and ucmatose import rpoll, and BIND_NOW
 * resolves every import at load), and refused, because rsockets (a socket API carried
 * over RDMA) are not in odpemu's scope. The clients we run call rpoll only on their
 * rsocket paths (rping -R, ucmatose's use_rs), so nothing we run reaches here.
 *
 * Each call fails with ENOSYS and returns its type's -1 (riomap (off_t)-1, riowrite
 * (size_t)-1); the first call in a process also says so on stderr, once.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#include <rdma/rsocket.h>

#include "cma.h"

static pthread_once_t rs_warn_once = PTHREAD_ONCE_INIT;

static void rs_warn(void)
{
	fputs("odpemu librdmacm: rsockets are not supported "
	      "(rsocket() and friends fail with ENOSYS)\n", stderr);
}

/* The one way every call below fails. */
static int rs_refuse(void)
{
	pthread_once(&rs_warn_once, rs_warn);
	errno = ENOSYS;
	return -1;
}

/* ---- sockets ---- */

CMA_EXPORT int rsocket(int domain, int type, int protocol)
{
	(void)domain; (void)type; (void)protocol;
	return rs_refuse();
}

CMA_EXPORT int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	(void)socket; (void)addr; (void)addrlen;
	return rs_refuse();
}

CMA_EXPORT int rlisten(int socket, int backlog)
{
	(void)socket; (void)backlog;
	return rs_refuse();
}

CMA_EXPORT int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket; (void)addr; (void)addrlen;
	return rs_refuse();
}

CMA_EXPORT int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen)
{
	(void)socket; (void)addr; (void)addrlen;
	return rs_refuse();
}

CMA_EXPORT int rshutdown(int socket, int how)
{
	(void)socket; (void)how;
	return rs_refuse();
}

CMA_EXPORT int rclose(int socket)
{
	(void)socket;
	return rs_refuse();
}

/* ---- data ---- */

CMA_EXPORT ssize_t rrecv(int socket, void *buf, size_t len, int flags)
{
	(void)socket; (void)buf; (void)len; (void)flags;
	return rs_refuse();
}

CMA_EXPORT ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags,
			     struct sockaddr *src_addr, socklen_t *addrlen)
{
	(void)socket; (void)buf; (void)len; (void)flags; (void)src_addr; (void)addrlen;
	return rs_refuse();
}

CMA_EXPORT ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags)
{
	(void)socket; (void)msg; (void)flags;
	return rs_refuse();
}

CMA_EXPORT ssize_t rsend(int socket, const void *buf, size_t len, int flags)
{
	(void)socket; (void)buf; (void)len; (void)flags;
	return rs_refuse();
}

CMA_EXPORT ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
			   const struct sockaddr *dest_addr, socklen_t addrlen)
{
	(void)socket; (void)buf; (void)len; (void)flags; (void)dest_addr; (void)addrlen;
	return rs_refuse();
}

CMA_EXPORT ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags)
{
	(void)socket; (void)msg; (void)flags;
	return rs_refuse();
}

CMA_EXPORT ssize_t rread(int socket, void *buf, size_t count)
{
	(void)socket; (void)buf; (void)count;
	return rs_refuse();
}

CMA_EXPORT ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt)
{
	(void)socket; (void)iov; (void)iovcnt;
	return rs_refuse();
}

CMA_EXPORT ssize_t rwrite(int socket, const void *buf, size_t count)
{
	(void)socket; (void)buf; (void)count;
	return rs_refuse();
}

CMA_EXPORT ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt)
{
	(void)socket; (void)iov; (void)iovcnt;
	return rs_refuse();
}

/* ---- polling ---- */

CMA_EXPORT int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	(void)fds; (void)nfds; (void)timeout;
	return rs_refuse();
}

CMA_EXPORT int rselect(int nfds, fd_set *readfds, fd_set *writefds,
		       fd_set *exceptfds, struct timeval *timeout)
{
	(void)nfds; (void)readfds; (void)writefds; (void)exceptfds; (void)timeout;
	return rs_refuse();
}

/* ---- names and options ---- */

CMA_EXPORT int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket; (void)addr; (void)addrlen;
	return rs_refuse();
}

CMA_EXPORT int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen)
{
	(void)socket; (void)addr; (void)addrlen;
	return rs_refuse();
}

CMA_EXPORT int rsetsockopt(int socket, int level, int optname,
			   const void *optval, socklen_t optlen)
{
	(void)socket; (void)level; (void)optname; (void)optval; (void)optlen;
	return rs_refuse();
}

CMA_EXPORT int rgetsockopt(int socket, int level, int optname,
			   void *optval, socklen_t *optlen)
{
	(void)socket; (void)level; (void)optname; (void)optval; (void)optlen;
	return rs_refuse();
}

/* The variadic argument is never read: nothing is done with any command. */
CMA_EXPORT int rfcntl(int socket, int cmd, ... /* arg */)
{
	(void)socket; (void)cmd;
	return rs_refuse();
}

/* ---- iomap (RDMA writes into a peer's mapped buffer) ---- */

CMA_EXPORT off_t riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
	(void)socket; (void)buf; (void)len; (void)prot; (void)flags; (void)offset;
	return (off_t)rs_refuse();
}

CMA_EXPORT int riounmap(int socket, void *buf, size_t len)
{
	(void)socket; (void)buf; (void)len;
	return rs_refuse();
}

CMA_EXPORT size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
	(void)socket; (void)buf; (void)count; (void)offset; (void)flags;
	return (size_t)rs_refuse();
}
