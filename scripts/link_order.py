#!/usr/bin/env python3
"""The link order of `botcraft`'s functions, from callgrind profiles of its stdio faces.

usage:
  link_order.py make BINARY OUT PROFILE.cg...  write OUT: the binary's functions each profile
                                               ran, the first profile's by the instructions
                                               they ran (most first), then each next profile's
                                               functions not yet listed, the same way
  link_order.py check BINARY ORDER             print how many of ORDER's symbols BINARY has

The profiles must be recorded with `valgrind --tool=callgrind --demangle=no`, so that their
function names are the symbols the linker orders (`--symbol-ordering-file`). Used by
scripts/link-order.sh; the reason is in apps/bot-craft/build.rs.
"""
import re
import subprocess
import sys

FN = re.compile(r"(c?fn)=\((\d+)\)(?: (\S+))?")
# callgrind names the deeper levels of a recursion `name'2`, `name'3`…: one function.
RECURSION = re.compile(r"'\d+$")
# Fewer matched functions than this from one profile: the profile or the binary is not what
# the list is made from (demangled names, a stripped binary, another build).
FLOOR = 1000


def self_costs(path):
    """Each function's own instructions in one callgrind file, by its (mangled) name."""
    names, costs = {}, {}
    current, after_calls = None, False
    with open(path, encoding="utf-8", errors="replace") as lines:
        for line in lines:
            if line.startswith("positions:") and line.split()[1:] != ["line"]:
                sys.exit(f"{path}: positions {line.split()[1:]}: record without --dump-instr")
            match = FN.match(line)
            if match:
                kind, ident, name = match.groups()
                if name:
                    names[ident] = name
                if kind == "fn":
                    current = ident
                continue
            if line.startswith("calls="):
                after_calls = True  # the next cost line is the call's inclusive cost
                continue
            if line[:1].isdigit() or line[:1] in "+-*":
                if after_calls:
                    after_calls = False
                    continue
                parts = line.split()
                if len(parts) >= 2 and current is not None:
                    costs[current] = costs.get(current, 0) + int(parts[1])
    if not names:
        sys.exit(f"{path}: no functions (not a callgrind file, or the run failed)")
    by_name = {}
    for ident, name in names.items():
        name = RECURSION.sub("", name)
        by_name[name] = by_name.get(name, 0) + costs.get(ident, 0)
    return by_name


def text_symbols(binary):
    out = subprocess.run(
        ["nm", "--defined-only", binary], capture_output=True, text=True, check=True
    ).stdout
    symbols = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in ("t", "T"):
            symbols.add(parts[2])
    if not symbols:
        sys.exit(f"{binary}: no function symbols (stripped?)")
    return symbols


def make(binary, out, profiles):
    symbols = text_symbols(binary)
    order, listed = [], set()
    for profile in profiles:
        costs = self_costs(profile)
        ranked = sorted(
            (name for name in costs if name in symbols and name not in listed),
            key=lambda name: (-costs[name], name),
        )
        matched = sum(1 for name in costs if name in symbols)
        if matched < FLOOR:
            sys.exit(f"{profile}: {matched} of the {len(costs)} functions it ran are in {binary}")
        order.extend(ranked)
        listed.update(ranked)
        print(f"{profile}: {len(ranked)} functions added ({len(costs)} ran)")
    with open(out, "w", encoding="utf-8") as file:
        file.write("".join(name + "\n" for name in order))
    print(f"{out}: {len(order)} symbols")


def check(binary, order_path):
    with open(order_path, encoding="utf-8") as file:
        order = [line.strip() for line in file if line.strip()]
    symbols = text_symbols(binary)
    found = sum(1 for name in order if name in symbols)
    print(f"link order: {found} of {len(order)} listed functions are in {binary}")


def main(argv):
    if len(argv) >= 5 and argv[1] == "make":
        make(argv[2], argv[3], argv[4:])
    elif len(argv) == 4 and argv[1] == "check":
        check(argv[2], argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
