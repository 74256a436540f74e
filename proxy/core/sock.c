/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <sys/socket.h>

#include "sock.h"

int sock_set_rst_on_close(int fd)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	return setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg)) < 0 ? -errno : 0;
}
