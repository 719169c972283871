# Timing helpers the benchmark scripts source: now (seconds since the
# epoch), elapsed A B (B - A, 3 decimals), median (of the numbers on stdin).
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f\n", b - a}'; }
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
