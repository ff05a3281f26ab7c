# Sourced by the test scripts. await_line FILE REGEX SECONDS PID: block until a line of FILE
# matches REGEX (a readiness line the program prints once it listens) and print that line.
# Fails when SECONDS pass or PID exits first. No polling: tail follows the file (inotify) and
# ends with this shell (--pid) if grep's early exit leaves it waiting for another line.
await_line() {
  local file=$1 regex=$2 seconds=$3 pid=$4 line
  line=$(timeout "$seconds" bash -c '
      tail -n +1 -F --pid="$3" "$1" 2>/dev/null | grep -m1 -E "$2"
    ' _ "$file" "$regex" "$pid") || return 1
  [ -n "$line" ] && printf '%s\n' "$line"
}
