#!/usr/bin/env bash
# Joins eddy2..eddyN to eddy1's cluster, as an operator would with
# `eddy admin`: a staged join on each joining node, then `cluster plan` and
# `cluster commit` on eddy1, then waits until `ringready` says TRUE and
# `transfers` says none are active. Nodes that are members already are
# skipped, so running it again is harmless.
#
#   deploy/join.sh            # after `docker-compose -f deploy/compose.yaml -p eddy up -d`
#
# EDDY_PROJECT (default eddy) is the compose project name, EDDY_NODES
# (default 5) how many nodes the compose file runs, EDDY_WAIT_SECS (default
# 120) how long each wait may take.
set -euo pipefail
cd "$(dirname "$0")"

if docker compose version >/dev/null 2>&1; then
  compose=(docker compose)
else
  compose=(docker-compose)
fi
compose+=(-f compose.yaml -p "${EDDY_PROJECT:-eddy}")
nodes=${EDDY_NODES:-5}
wait_secs=${EDDY_WAIT_SECS:-120}
# The compose file refuses to load without a cookie; exec needs none.
export EDDY_COOKIE=${EDDY_COOKIE:-unused-by-exec}

admin() { # NODE ARGS...: `eddy ARGS` inside the container of NODE
  local node=$1
  shift
  "${compose[@]}" exec -T "$node" eddy "$@"
}

wait_for() { # WHAT COMMAND...: runs COMMAND until it succeeds
  local what=$1 deadline=$((SECONDS + wait_secs))
  shift
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS > deadline)); then
      echo "join.sh: $what: not within ${wait_secs} s" >&2
      return 1
    fi
    sleep 0.5
  done
}

started=$SECONDS
for i in $(seq 1 "$nodes"); do
  wait_for "eddy$i answering ping" admin "eddy$i" ping
done

members=$(admin eddy1 admin member-status)
joined=0
for i in $(seq 2 "$nodes"); do
  if grep -q "eddy@eddy$i'" <<<"$members"; then
    echo "eddy@eddy$i is a member already"
    continue
  fi
  admin "eddy$i" admin cluster join eddy@eddy1
  joined=$((joined + 1))
done

if ((joined > 0)); then
  admin eddy1 admin cluster plan
  admin eddy1 admin cluster commit
fi

no_transfers() { admin eddy1 admin transfers | grep -q "No transfers active"; }
wait_for "ringready" admin eddy1 admin ringready
wait_for "transfers to finish" no_transfers
admin eddy1 admin member-status
echo "cluster of $nodes nodes ready in $((SECONDS - started)) s"
