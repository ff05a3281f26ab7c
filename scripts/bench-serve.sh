# Sourced by scripts/callgrind-faces.sh, scripts/link-order.sh and scripts/bench-local-ab.sh:
# a `botcraft serve` with server `fake` (test-support's fake-mcp-server, always on, started)
# bound to bot `bench`. Needs $root, $botcraft, and scripts/await-line.sh sourced.

# bench_setup NAME: builds mcp-bench and the fake server ($bench, $fake), makes the run's
# folder ($work) and keys ($admin_key, $bot_key), and on exit ends serve's process group and
# removes $work (bench_cleanup; a script with more to do traps its own, which calls it).
bench_setup() {
  local name=$1
  cargo build --release --locked -q -p bench -p test-support --bin mcp-bench --bin fake-mcp-server
  bench="$root/target/release/mcp-bench"
  fake="$root/target/release/fake-mcp-server"
  work=$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX")
  pid=
  admin_key="$name-admin-$RANDOM$RANDOM"
  bot_key="$name-bot-$RANDOM$RANDOM"
  trap bench_cleanup EXIT
}

bench_cleanup() {
  [ -n "$pid" ] && kill -KILL -- "-$pid" 2>/dev/null || true
  rm -rf "$work"
}

# start_serve DATA [PREFIX…]: serve (run under PREFIX, valgrind say) in data folder DATA;
# sets $pid and $url.
start_serve() {
  local data=$1; shift
  BOTCRAFT_BOT_KEYS="bench=$bot_key" RUST_LOG=warn setsid setpriv --pdeathsig KILL \
    "$@" "$botcraft" serve --no-seed --addr 127.0.0.1:0 --data-dir "$data" \
    --api-key "$admin_key" >"$data.log" 2>&1 &
  pid=$!
  local line
  line=$(await_line "$data.log" 'listening on http://' 600 "$pid")
  url=${line##*listening on }
  local cli=(--url "$url" --api-key "$admin_key")
  "$botcraft" servers add fake --command "$fake" --always-on "${cli[@]}" >/dev/null
  "$botcraft" bots add bench --model openai:none "${cli[@]}" >/dev/null
  "$botcraft" bots bind bench fake "${cli[@]}" >/dev/null
  "$botcraft" servers start fake "${cli[@]}" >/dev/null
}

# stop_serve: serve ends on TERM (its drain; valgrind writes its counts as it exits).
stop_serve() {
  kill -TERM "$pid"
  timeout 120 tail --pid="$pid" -f /dev/null
  kill -KILL -- "-$pid" 2>/dev/null || true
  pid=
}
