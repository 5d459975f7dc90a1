#!/usr/bin/env bash
# Checks the container image end to end, timing each step:
#   1. builds it (deploy/build-image.sh; SKIP_BUILD=1 uses the image there is),
#   2. runs one container, waits for `eddy ping` to answer, stops it with
#      SIGTERM and checks that it exited cleanly,
#   3. starts the five-node compose cluster, joins it (deploy/join.sh),
#      writes a key over HTTP on eddy1 and reads it on eddy5, then removes
#      the cluster and its volumes.
# Needs docker and curl on the host; not part of CI (it needs a release
# build). Leaves nothing running, also when a step fails.
set -euo pipefail
cd "$(dirname "$0")"

image=${EDDY_IMAGE:-eddy:latest}
export EDDY_IMAGE=$image EDDY_COOKIE=${EDDY_COOKIE:-smoke-$RANDOM$RANDOM}
export EDDY_PROJECT=${EDDY_PROJECT:-eddy-smoke}
if docker compose version >/dev/null 2>&1; then
  compose=(docker compose)
else
  compose=(docker-compose)
fi
compose+=(-f compose.yaml -p "$EDDY_PROJECT")
single=eddy-smoke-single

cleanup() {
  docker rm -f -v "$single" >/dev/null 2>&1 || true
  "${compose[@]}" down -v >/dev/null 2>&1 || true
}
trap cleanup EXIT

step() { # NAME: prints how long the previous step took
  local now=$SECONDS
  if [[ -n ${step_name:-} ]]; then echo "== $step_name: $((now - step_started)) s"; fi
  step_name=$1 step_started=$now
}

wait_for() { # WHAT COMMAND...
  local what=$1 deadline=$((SECONDS + 60))
  shift
  until "$@" >/dev/null 2>&1; do
    if ((SECONDS > deadline)); then echo "smoke: $what: not within 60 s" >&2; return 1; fi
    sleep 0.2
  done
}

step "build the image"
if [[ -z ${SKIP_BUILD:-} ]]; then ./build-image.sh "$image"; fi

step "one container answers ping"
docker run -d --name "$single" -e EDDY_DISTRIBUTED_COOKIE="$EDDY_COOKIE" "$image" >/dev/null
wait_for "ping" docker exec "$single" eddy ping
docker exec "$single" eddy ping

step "it stops cleanly on SIGTERM"
docker stop -t 60 "$single" >/dev/null
code=$(docker inspect -f '{{.State.ExitCode}}' "$single")
docker logs "$single" 2>&1 | tail -3
if [[ $code != 0 ]]; then echo "smoke: exit code $code" >&2; exit 1; fi

step "five nodes start"
"${compose[@]}" up -d
for i in 1 2 3 4 5; do wait_for "eddy$i ping" curl -fsS "http://127.0.0.1:18${i}98/ping"; done

step "five nodes join (deploy/join.sh)"
./join.sh

step "a write on eddy1 is read on eddy5"
curl -fsS -X PUT -H 'Content-Type: text/plain' --data-binary 'written on eddy1' \
  "http://127.0.0.1:18198/buckets/smoke/keys/k1"
got=$(curl -fsS "http://127.0.0.1:18598/buckets/smoke/keys/k1")
if [[ $got != "written on eddy1" ]]; then echo "smoke: eddy5 read '$got'" >&2; exit 1; fi
echo "eddy5 read: $got"

step "the cluster stops"
"${compose[@]}" down -v
step ""
echo "smoke: all steps passed"
