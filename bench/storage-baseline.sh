#!/usr/bin/env bash
# Storage benchmark beside an fio baseline taken in the same run, on the same
# filesystem. Prints one table: each eddy figure, its fio baseline, the ratio,
# and the goal from issue 2. Raw results (fio and eddy JSON) are kept in
# $OUT_DIR for docs/BENCHMARKS.md.
#
# Usage: bench/storage-baseline.sh [DATA_DIR]
#   DATA_DIR  where fio and eddy write (default: target/bench-storage in the
#             repository); everything written there is removed again.
# Environment:
#   QUICK=1          every size divided by 16 (a smoke run of a few seconds)
#   BACKENDS="..."   engines to measure (default: every disk engine the
#                    binary offers, plus memory)
#   OUT_DIR=...      where results go (default: target/bench-results)
#   EDDY=...         a prebuilt eddy binary with the bench tool (default:
#                    cargo build --release --features bench)
#   TABLE_ONLY=1     print the table from the results already in $OUT_DIR
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
data_dir=${1:-$repo/target/bench-storage}
out_dir=${OUT_DIR:-$repo/target/bench-results}
scale=1
[[ ${QUICK:-0} == 1 ]] && scale=16

log() { echo "== $*" >&2; }

ensure_tools() {
    local missing=()
    command -v fio >/dev/null || missing+=(fio)
    command -v jq >/dev/null || missing+=(jq)
    ((${#missing[@]} == 0)) && return
    log "installing ${missing[*]}"
    local sudo=""
    [[ $(id -u) == 0 ]] || sudo=sudo
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

build_eddy() {
    if [[ -n ${EDDY:-} ]]; then
        echo "$EDDY"
        return
    fi
    log "cargo build --release -p eddy --features bench"
    (cd "$repo" && cargo build --release -p eddy --features bench >&2)
    echo "$repo/target/release/eddy"
}

# fio JOB_NAME ARGS... : runs one fio job in $data_dir, JSON to $out_dir/fio-JOB.json.
# Every job starts with no dirty pages (sync) and appends to a file that is not
# preallocated (fallocate=none), as bitcask's data files and lsm's journal are.
run_fio() {
    local name=$1
    shift
    log "fio $name"
    sync
    fio --name="$name" --directory="$data_dir" --ioengine=psync --fallocate=none \
        --output-format=json --output="$out_dir/fio-$name.json" "$@" >/dev/null
}

fio_baselines() {
    local size_mb=$((2048 / scale))
    # Buffered sequential write, no fsync at the end: the same contract as an
    # eddy put phase with --sync none (both stop when the page cache has the data).
    # Repeated: on this kind of VM a fresh file's first write varies 2x from
    # run to run, so the table uses the median of three (eddy's 8 KB puts too).
    for i in 1 2 3; do
        rm -f "$data_dir/seqwrite.dat"
        run_fio "seqwrite-$i" --rw=write --bs=8k --size="${size_mb}M" --end_fsync=0 \
            --filename=seqwrite.dat
    done
    # The same, flushed at the end: what the disk itself sustains (for context).
    run_fio seqwrite-fsync --rw=write --bs=8k --size="${size_mb}M" --end_fsync=1 \
        --filename=seqwrite.dat
    # 4 KB random reads of that file from the page cache: one pread per op,
    # the most a get that reads one record can do.
    run_fio randread-cached --rw=randread --bs=4k --size="${size_mb}M" --invalidate=0 \
        --filename=seqwrite.dat --time_based --runtime=$((10 / (scale > 1 ? 5 : 1)))
    rm -f "$data_dir/seqwrite.dat"
    # Single-thread fdatasync rate: one 4 KB write then fdatasync, queue depth 1.
    run_fio fdatasync --rw=write --bs=4k --size=256M --fdatasync=1 --iodepth=1 \
        --time_based --runtime=$((10 / (scale > 1 ? 5 : 1)))
    rm -f "$data_dir"/fdatasync.0.0
}

fio_figure() { jq -r "$2" "$out_dir/fio-$1.json"; }

# median of three numbers on stdin
median3() { sort -g | sed -n 2p; }

fio_seq_mbs() {
    for i in 1 2 3; do fio_figure "seqwrite-$i" '.jobs[0].write.bw_bytes / 1e6'; done | median3
}

# eddy NAME ARGS... : one `eddy bench storage` run in a fresh directory.
run_eddy() {
    local name=$1
    shift
    local dir="$data_dir/eddy-$name"
    rm -rf "$dir"
    log "eddy $name: $*"
    sync
    "$eddy" bench storage --dir "$dir" --json "$@" >"$out_dir/eddy-$name.json"
    rm -rf "$dir"
}

eddy_figure() { jq -r "$2" "$out_dir/eddy-$1.json"; }

eddy_put_8k_mbs() {
    for i in 1 2 3; do eddy_figure "$1-put-8k-$i" .mb_per_s; done | median3
}

has_backend() { "$eddy" bench storage -h | grep -q "possible values:.*\b$1\b"; }

eddy_runs() {
    local b=$1
    local k100=$((1000000 / scale)) k8=$((262144 / scale)) kmerge=$((65536 / scale))
    for i in 1 2 3; do
        run_eddy "$b-put-8k-$i" --backend "$b" --workload put --value-size 8192 \
            --keys "$k8" --ops "$k8"
    done
    run_eddy "$b-put-100" --backend "$b" --workload put --value-size 100 \
        --keys "$k100" --ops "$k100" --key-order random
    run_eddy "$b-get-100" --backend "$b" --workload get --value-size 100 \
        --keys "$k100" --ops "$k100" --key-order random
    [[ $b == memory ]] && return
    run_eddy "$b-put-8k-lz4" --backend "$b" --workload put --value-size 8192 \
        --keys "$k8" --ops "$k8" --compression
    run_eddy "$b-group-commit" --backend "$b" --workload put --value-size 100 \
        --keys "$k100" --ops $((100000 / scale)) --key-order random --threads 64 --sync always
    # No index-scan: bitcask and lsm keep no index entries (a node keeps
    # them in its vnodes' side stores).
    run_eddy "$b-open" --backend "$b" --workload open --value-size 100 \
        --keys "$k100" --ops 100000
    if [[ $b == bitcask ]]; then
        run_eddy "$b-merge" --backend "$b" --workload merge --value-size 8192 \
            --keys "$kmerge" --ops 100000 --threads 2 --key-order random
    fi
}

# row FIGURE EDDY BASELINE GOAL_KIND GOAL : one table row (TSV).
# GOAL_KIND: ratio (eddy/baseline >= GOAL), min (eddy >= GOAL), max (eddy <= GOAL), none.
row() {
    awk -v f="$1" -v e="$2" -v b="$3" -v kind="$4" -v g="$5" 'BEGIN {
        ratio = (b > 0) ? sprintf("%.3f", e / b) : "-"
        base = (b > 0) ? sprintf("%.0f", b) : "-"
        if (kind == "ratio") { goal = ">= " g " x fio"; ok = (e / b >= g) }
        else if (kind == "min") { goal = ">= " g; ok = (e >= g) }
        else if (kind == "max") { goal = "<= " g; ok = (e <= g) }
        else { goal = "-"; ok = -1 }
        verdict = (ok == 1) ? "met" : (ok == 0 ? "MISSED" : "-")
        printf "%s\t%.1f\t%s\t%s\t%s\t%s\n", f, e, base, ratio, goal, verdict
    }'
}

report_rows() {
    local b=$1
    local seq_mbs rr_iops sync_iops
    seq_mbs=$(fio_seq_mbs)
    rr_iops=$(fio_figure randread-cached '.jobs[0].read.iops')
    sync_iops=$(fio_figure fdatasync '.jobs[0].write.iops')
    # The issue's goals are for the disk engines; memory rows are context.
    local ratio=ratio min=min max=max
    [[ $b == memory ]] && ratio=none min=none max=none
    row "$b put 8 KB seq, sync none, median of 3 (MB/s)" "$(eddy_put_8k_mbs "$b")" "$seq_mbs" $ratio 0.75
    row "$b put 100 B random, 1 thread (puts/s)" "$(eddy_figure "$b-put-100" .ops_per_s)" "" $min 500000
    row "$b put 100 B random, 1 thread (MB/s)" "$(eddy_figure "$b-put-100" .mb_per_s)" "$seq_mbs" none ""
    row "$b get 100 B random, cached (gets/s)" "$(eddy_figure "$b-get-100" .ops_per_s)" "$rr_iops" $min 1000000
    [[ $b == memory ]] && return
    local keys
    keys=$(eddy_figure "$b-open" .params.keys)
    row "$b put 8 KB seq, lz4, half compressible (MB/s)" "$(eddy_figure "$b-put-8k-lz4" .mb_per_s)" "$seq_mbs" none ""
    row "$b group commit, 64 writers (puts/s)" "$(eddy_figure "$b-group-commit" .ops_per_s)" "$sync_iops" ratio 20
    row "$b group commit p99 (us)" "$(eddy_figure "$b-group-commit" .p99_us)" "" none ""
    row "$b open, $keys keys (ms)" "$(eddy_figure "$b-open" .extra.open_ms)" "" none ""
    [[ $b == bitcask ]] || return 0
    row "$b open without hint files, $keys keys (ms)" "$(eddy_figure "$b-open" .extra.open_without_hints_ms)" "" none ""
    # Goal: 40 bytes plus the key; a keydir key is the bucket (5 B) and key (8 B).
    row "$b keydir bytes per key, $keys keys" "$(eddy_figure "$b-get-100" .extra.keydir_bytes_per_key)" "" $max 53
    row "$b merge of $(eddy_figure "$b-merge" .extra.merge_input_mb) MB, 50 % dead (s)" "$(eddy_figure "$b-merge" .extra.merge_s)" "" none ""
    row "$b merge throughput (MB/s)" "$(eddy_figure "$b-merge" .extra.merge_mb_per_s)" "$seq_mbs" none ""
    row "$b read p99 before merge (us)" "$(eddy_figure "$b-merge" .extra.p99_us_before_merge)" "" none ""
    row "$b read p99 during merge (us)" "$(eddy_figure "$b-merge" .p99_us)" "" none ""
    row "$b reads/s during merge" "$(eddy_figure "$b-merge" .ops_per_s)" "" none ""
}

print_table() {
    local backends=$1
    echo
    echo "fio baselines ($data_dir):"
    local runs
    runs=$(for i in 1 2 3; do fio_figure "seqwrite-$i" '.jobs[0].write.bw_bytes / 1e6 | round'; done | paste -sd/)
    printf "  seq write 8k buffered      %10.1f MB/s  (median of %s)\n" "$(fio_seq_mbs)" "$runs"
    printf "  seq write 8k + end fsync   %10.1f MB/s\n" "$(fio_figure seqwrite-fsync '.jobs[0].write.bw_bytes / 1e6')"
    printf "  4k randread, page cache    %10.0f IOPS\n" "$(fio_figure randread-cached '.jobs[0].read.iops')"
    printf "  4k write + fdatasync, QD1  %10.0f /s\n" "$(fio_figure fdatasync '.jobs[0].write.iops')"
    echo
    {
        printf "figure\teddy\tfio\tratio\tgoal\tverdict\n"
        for b in $backends; do report_rows "$b"; done
    } | column -t -s $'\t' | tee "$out_dir/table.txt"
}

main() {
    ensure_tools
    mkdir -p "$data_dir" "$out_dir"
    eddy=$(build_eddy)
    local backends=${BACKENDS:-}
    if [[ -z $backends ]]; then
        for b in bitcask lsm memory; do has_backend "$b" && backends+="$b "; done
    fi
    if [[ ${TABLE_ONLY:-0} == 1 ]]; then
        cat "$out_dir/machine.txt"
        print_table "$backends"
        return
    fi
    {
        echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
        echo "commit: $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)"
        echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
        echo "nproc: $(nproc)"
        echo "memory: $(free -g | awk '/^Mem:/ {print $2}') GiB"
        echo "filesystem: $(df -T "$data_dir" | awk 'NR == 2 {print $2, $1}')"
        echo "kernel: $(uname -r)"
        echo "scale: 1/$scale"
    } | tee "$out_dir/machine.txt"
    fio_baselines
    for b in $backends; do eddy_runs "$b"; done
    print_table "$backends"
}

main "$@"
