/* SPDX-License-Identifier: MIT */
/* loop's two backends (loop.h KINDS): loop.c holds the io_uring one and picks; these are
 * the epoll one's, in loop_epoll.c. */
#ifndef ODPEMU_EMU_LOOP_INT_H
#define ODPEMU_EMU_LOOP_INT_H

#include "loop.h"

int emu_epoll_init(struct emu_loop *l, unsigned entries);
void emu_epoll_fini(struct emu_loop *l);
void emu_epoll_poll_in(struct emu_loop *l, int fd, struct emu_io *io);
void emu_epoll_rearm(struct emu_loop *l, struct emu_io *io);
int emu_epoll_cancel(struct emu_loop *l, struct emu_io *io, bool last_completion);
int emu_epoll_run_once(struct emu_loop *l, uint64_t deadline_ns);

#endif
