/* SPDX-License-Identifier: MIT */
/* The device node clients' accessibility checks look for (ipc.h: IPC_DEVNODE_NAME): a
 * symbolic link to /dev/null in /dev/infiniband. Shared by every daemon on the host and
 * inert, so it is made once and left in place (/dev is rebuilt at boot). Without the
 * right to write /dev (not root), UCX does not list odpemu devices: say so once. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devnode.h"
#include "ipc.h"
#include "log.h"

void emu_devnode_ensure(void)
{
	const char *path = IPC_DEVNODE_DIR "/" IPC_DEVNODE_NAME;
	struct stat st;

	if (!stat(path, &st) && S_ISCHR(st.st_mode))
		return;
	if ((mkdir(IPC_DEVNODE_DIR, 0755) && errno != EEXIST) ||
	    (symlink("/dev/null", path) && errno != EEXIST))
		emu_log(EMU_LOG_WARN, "cannot create %s (%s): UCX will not list this device "
			"(run odpemud as root once, or create it as a link to /dev/null)",
			path, strerror(errno));
}
