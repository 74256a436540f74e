#!/bin/bash
# Guards rdma link failover between two hosts: with flows mid-transfer on both links of a group between guest a and guest b, one link failed on daemon A (`debug fail-link`) is seen down by daemon B through rdma_cm across the wire, its flows move to the survivor and resume from the last confirmed cursor on both sides: every flow completes with its sha256 intact, none is reset, the group lives on and carries new flows; and daemon B, whose debug.fail_link is false, refuses the command.
. "$(dirname "$0")/lib.sh"
rp_init "$@"
# shellcheck source=SCRIPTDIR/../scenario/failover.sh
. "$RT_LIB_DIR/scenario/failover.sh"
