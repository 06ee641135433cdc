# Source this from a result folder's chunked run script (after `cd` to the checkout and setting R to the result
# folder): `commit MESSAGE` commits R alone (retried while another git command holds the index lock), `count SUB`
# prints how many rows R/SUB/rows.jsonl holds (0 when there is none yet).
commit() {
  for _ in 1 2 3 4 5; do
    git add "$R" && git commit -q -m "$1" -- "$R" && return 0
    sleep 5
  done
}
count() { [ -f "$R/$1/rows.jsonl" ] && wc -l < "$R/$1/rows.jsonl" || echo 0; }
