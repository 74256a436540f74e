#!/bin/bash
# Guards rdma link failover: with flows mid-transfer on both links of a group, `smcproxyctl debug fail-link` on one link moves its flows to the survivor, which resumes them from the last confirmed cursor: every flow completes with its sha256 intact and none is reset; the failed link shows down on both daemons while the group lives on, the survivor carries the rest and new flows; and the command is refused by a daemon whose debug.fail_link is false.
. "$(dirname "$0")/lib.sh"
rt_init "$@"
# shellcheck source=SCRIPTDIR/scenario/failover.sh
. "$RT_LIB_DIR/scenario/failover.sh"
