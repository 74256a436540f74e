#!/bin/bash
# Guards FIN and RST between two hosts over rdma: after either side's FIN the other direction still arrives whole, a server RST on guest b reaches the client on guest a as an ECONNRESET and a client RST reaches the server, and every flow ends on both daemons, all over rdma (the FIN, RST and CLOSED messages cross the wire between two kernels).
. "$(dirname "$0")/lib.sh"
rp_init "$@"
# shellcheck source=SCRIPTDIR/../scenario/close.sh
. "$RT_LIB_DIR/scenario/close.sh"
