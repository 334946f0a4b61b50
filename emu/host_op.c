/* SPDX-License-Identifier: MIT */
/* host_op — HOST_REPORT (ipc.h): the report the daemon probed at start (check.h), for
 * odpemu_query_host and `odpemu-ctl devinfo -v`. */
#include "host_op.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "odpemu/odpemu.h"

#include "check.h"
#include "daemon.h"
#include "session.h"

_Static_assert((int)EMU_CHECK_AVAILABLE == (int)ODPEMU_HOST_AVAILABLE &&
	       (int)EMU_CHECK_FALLBACK == (int)ODPEMU_HOST_FALLBACK &&
	       (int)EMU_CHECK_MISSING == (int)ODPEMU_HOST_MISSING, "verdicts in one order");

int emu_op_host_report(struct emu_req *r)
{
	const struct emu_check_report *rep = &r->s->d->host;
	static struct {
		struct ipc_host_rep rep;
		struct ipc_host_row row[IPC_MAX_HOST_ROWS];
	} page;		/* the loop thread's, one request at a time */

	if (r->len)
		return emu_reply_err(r, -EBADMSG, "HOST_REPORT has no body");
	memset(&page, 0, sizeof(page));
	for (unsigned i = 0; i < rep->n && page.rep.n < IPC_MAX_HOST_ROWS; i++) {
		struct ipc_host_row *o = &page.row[page.rep.n++];

		snprintf(o->name, sizeof(o->name), "%s", rep->r[i].row->name);
		snprintf(o->detail, sizeof(o->detail), "%s", rep->r[i].detail);
		o->verdict = (uint32_t)rep->r[i].verdict;	/* the same three, in order */
		o->masked = rep->r[i].masked;
	}
	return emu_ctl_reply(r->s, r->hdr, 0, &page,
			     sizeof(page.rep) + page.rep.n * sizeof(page.row[0]), NULL, 0);
}
