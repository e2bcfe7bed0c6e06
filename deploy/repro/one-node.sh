# Sourced by the reproduction scripts of this folder: a folder to work in and one stock node in it,
# stopped (by its pid) when the script exits.
#
#   one_node_workspace NAME   makes WORK (a new temporary folder named after NAME when WORK is
#                             empty; else WORK must be new or empty), sets NC (the needle-cluster
#                             command on WORK/cluster) and an exit trap that stops the node and
#                             removes WORK, or keeps both when KEEP is 1
#   cql STATEMENTS            runs CQL on node 1

one_node_workspace() {
  if [[ -z "$WORK" ]]; then
    WORK="$(mktemp -d -t "$1.XXXXXX")"
  elif [[ -e "$WORK" && -n "$(ls -A "$WORK")" ]]; then
    echo "--dir $WORK is not empty" >&2; exit 2
  fi
  mkdir -p "$WORK"
  NC=("$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/../needle-cluster" --dir "$WORK/cluster")
  trap one_node_cleanup EXIT
}

one_node_cleanup() {
  if [[ "$KEEP" == 1 ]]; then
    "${NC[@]}" down --keep >/dev/null 2>&1 || true
    echo "kept: $WORK (node logs in $WORK/cluster/node1/logs)"
  else
    "${NC[@]}" down >/dev/null 2>&1 || true
    rm -rf "$WORK"
  fi
}

cql() { "${NC[@]}" cql 1 -e "$1"; }
