#!/bin/bash
# Guards FIN and RST across an rdma link group: after either side's FIN the other direction still arrives whole, a server RST reaches the client as an ECONNRESET and a client RST reaches the server, and every flow ends on both daemons, all over rdma.
. "$(dirname "$0")/lib.sh"
rt_init "$@"
# shellcheck source=SCRIPTDIR/scenario/close.sh
. "$RT_LIB_DIR/scenario/close.sh"
