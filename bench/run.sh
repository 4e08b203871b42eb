#!/bin/sh
# Runs the drop-to-commit benchmarks (1,000,000 CSV rows, the same rows as
# JSON Lines, 200,000 Excel rows; JOBDROP_BENCH_CSV_ROWS (CSV and JSON
# Lines) / JOBDROP_BENCH_XLSX_ROWS override) and the
# rename-to-commit latency of 100 files of 10 rows, beside kcat producing
# the same records, and prints a table. Used by make bench.
set -eu
cd "$(dirname "$0")/.."
GO=${GO:-go}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$GO" test -run '^$' -bench 'Drop|RenameToCommit' -benchtime 1x -timeout 30m ./bench | tee "$out" >&2
echo
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
awk '
function metric(name,   i) { for (i = 3; i < NF; i++) if ($(i+1) == name) return $i; return "" }
BEGIN {
	printf "%-6s %10s %12s %12s %10s %12s %12s %10s %6s\n", "format", "rows", "rows/s", "peak RSS", "peak heap", "kcat rows/s", "kcat RSS", "ratio", "cores"
}
/^BenchmarkDrop/ {
	f = tolower($1); sub(/^benchmarkdrop/, "", f); sub(/-[0-9]+$/, "", f)
	k = metric("kcat-rows/s")
	printf "%-6s %10d %12.0f %9.0f MiB %6.0f MiB %12s %8s MiB %10s %6.2f\n", f, metric("rows"), metric("rows/s"),
		metric("peak-RSS-MiB"), metric("peak-heap-MiB"), (k == "" ? "-" : sprintf("%.0f", k)),
		(k == "" ? "-" : sprintf("%.0f", metric("kcat-RSS-MiB"))), (k == "" ? "-" : sprintf("%.2f", metric("ratio"))), metric("cores")
}
/^BenchmarkRenameToCommit/ {
	printf "\nrename to commit, %d files of 10 rows: p50 %s ms, p99 %s ms (kcat producing each file: p50 %s ms, p99 %s ms)\n",
		metric("drops"), metric("p50-ms"), metric("p99-ms"), metric("kcat-p50-ms"), metric("kcat-p99-ms")
}' "$out"
"$GO" test -run '^$' -bench BurstFromOutside -benchtime 1x -timeout 30m ./bench | tee "$out" >&2
awk '
function metric(name,   i) { for (i = 3; i < NF; i++) if ($(i+1) == name) return $i; return "" }
/^BenchmarkBurstFromOutside\// {
	setup = $1; sub(/^BenchmarkBurstFromOutside\//, "", setup); sub(/-[0-9]+$/, "", setup)
	printf "\nburst of %d one-shot tasks due the same second (%s broker), seen by a consumer outside jobdrop: lateness p50 %s ms, p99 %s ms, max %s ms; %.0f fires/s (that consumer alone reads %.0f records/s); jobdrop peak RSS %.0f MiB; the console showed every task completed %s s after the drop\n",
		metric("tasks"), setup, metric("p50-ms"), metric("p99-ms"), metric("max-ms"), metric("fires/s"), metric("reread-records/s"), metric("peak-rss-MiB"), metric("console-s")
}' "$out"
