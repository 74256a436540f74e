/* SPDX-License-Identifier: MIT */
/* Socket options the data plane's layers share. */
#ifndef SMCPROXY_SOCK_H
#define SMCPROXY_SOCK_H

/* close() then sends an RST instead of a FIN: how a reset is carried on
 * to an application. 0 or -errno. */
int sock_set_rst_on_close(int fd);

#endif
