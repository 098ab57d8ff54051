#!/usr/bin/env bash
# bench/cpu-per-request.sh PID URL TOKEN [SECONDS] [HEADER]
#
# Requests per second and the CPU time process PID spends per request
# (utime + stime from /proc over the run) while bin/httpbench sends GET URL
# with the bearer TOKEN at c=32. CPU per request is what to read on a
# shared machine, where the rate moves with the load and it barely does.
# HEADER ('Name: value') is sent too, e.g. 'Accept-Encoding: gzip, deflate'.
set -euo pipefail
pid=$1 url=$2 tok=$3 secs=${4:-10} extra=${5:-}
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
a=$(cpu "$pid")
out=$(bin/httpbench -target "x|$url" -c 32 -header "Authorization: Bearer $tok" ${extra:+-header "$extra"} \
  -rounds 1 -duration "${secs}s" -warmup 0s 2>&1)
b=$(cpu "$pid")
rps=$(awk -F'|' '/^\| x/{gsub(/ /, "", $4); print $4}' <<<"$out")
[[ -n $rps ]] || { echo "$out" >&2; exit 1; }
awk -v a="$a" -v b="$b" -v hz="$hz" -v rps="$rps" -v s="$secs" -v load="$(cut -d' ' -f1 /proc/loadavg)" \
  'BEGIN { printf "req/s=%d cpu_us_per_request=%.1f load=%s\n", rps, (b - a) / hz * 1e6 / (rps * s), load }'
