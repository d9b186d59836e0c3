#!/usr/bin/env bash
# Measure `iosched serve` with real fio (nbd engine) on loopback: QD1 random-read
# latency against the model's own prediction (`iosched fio`, same job, virtual
# time), lateness at a fixed 10 K IOPS, and QD32 IOPS against nbdkit's memory
# plugin. Needs fio with the nbd engine (Debian's), nbdkit for the comparison.
# Usage: examples/serve/measure.sh [path/to/iosched]   (default: target/release/iosched)
set -euo pipefail
BIN=${1:-target/release/iosched}
SECS=${SECS:-5}
PORT=${PORT:-10899}
job() { # device sched extra-fio-args...
    local dev=$1 sched=$2; shift 2
    "$BIN" serve --device "$dev" --sched "$sched" --size 1g --port "$PORT" --status 0 \
        > /tmp/iosched-serve.$$.out 2>/dev/null &
    local pid=$!
    sleep 0.5
    fio --name=m --ioengine=nbd --uri="nbd://127.0.0.1:$PORT/" --size=1g --bs=4k \
        --time_based --runtime="$SECS" --output-format=terse --terse-version=3 "$@" \
        > /tmp/iosched-fio.$$.out
    kill -TERM "$pid"; wait "$pid" || true
    # terse v3: field 8 read IOPS; 40 clat mean (us); clat percentiles follow.
    awk -F';' '/^3;/{printf "  fio:   IOPS=%s clat mean=%.1fus p50=%s p99=%s\n", $8, $16, $24, $30}' \
        /tmp/iosched-fio.$$.out | sed 's/50.000000%=//; s/99.000000%=//'
    grep -E "modelled lat|lateness" /tmp/iosched-serve.$$.out | sed 's/^ */  serve: /'
}
predict() { # device sched fio-args (the same job, simulated)
    local dev=$1 sched=$2; shift 2
    "$BIN" fio --name=m --ioengine=libaio --direct=1 --size=1g --bs=4k --time_based \
        --runtime="$SECS" --device "$dev" --sched "$sched" --host free --submit-ns 0 "$@" \
        | grep -E "^ +clat \(|^ +clat percentiles" -A2 | head -4 | sed 's/^/  model: /'
}
for d in "hdd-7200 mq-deadline" "nvme-gen4 none"; do
    set -- $d
    echo "== $1 ($2): randread 4k QD1"
    predict "$1" "$2" --rw=randread --iodepth=1
    job "$1" "$2" --rw=randread --iodepth=1
done
echo "== nvme-gen4 (none): randread 4k at 10000 IOPS, QD4"
job nvme-gen4 none --rw=randread --iodepth=4 --rate_iops=10000
echo "== ideal (none): randread 4k QD32"
job ideal none --rw=randread --iodepth=32
if command -v nbdkit >/dev/null; then
    echo "== nbdkit memory 1G: randread 4k QD32"
    nbdkit --exit-with-parent -f -p "$PORT" -i 127.0.0.1 memory 1G &
    nk=$!
    sleep 0.5
    fio --name=m --ioengine=nbd --uri="nbd://127.0.0.1:$PORT/" --size=1g --bs=4k --time_based \
        --runtime="$SECS" --rw=randread --iodepth=32 --output-format=terse --terse-version=3 \
        | awk -F';' '/^3;/{printf "  fio:   IOPS=%s clat mean=%.1fus\n", $8, $16}'
    kill "$nk"; wait "$nk" 2>/dev/null || true
fi
rm -f /tmp/iosched-serve.$$.out /tmp/iosched-fio.$$.out
