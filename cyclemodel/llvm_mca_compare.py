#!/usr/bin/env python3
"""The cycle model beside LLVM's Cortex-M4 scheduling model on the sample operators' inner loops.

For every innermost loop of the given functions in a firmware image (a backward branch with no
other backward branch inside it), the path of one iteration is followed from the loop's head to
its back branch (conditional branches inside the loop taken where that is the way to the back
branch); that path's cycles per iteration are computed by the cycle model (static_cycles, steady
state) and by `llvm-mca -mcpu=cortex-m4` (Total Cycles / Iterations).

llvm-mca simulates an in-order, single-issue core with LLVM's latencies, and charges a taken
branch like any instruction: no pipeline refill. So the model's cycles without its refills are
what is comparable; both figures are printed. Exits 1 when a loop's difference is over
--tolerance (relative to llvm-mca), 2 on bad input.
"""
import argparse
import re
import subprocess
import sys

BRANCH = re.compile(r"^(b|b\.[nw]|b(eq|ne|cs|hs|cc|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le)(\.[nw])?|cbz|cbnz)$")


def disassemble(objdump, elf):
    out = subprocess.run([objdump, "-d", elf], capture_output=True, text=True, check=True).stdout
    funcs, cur = {}, None
    for line in out.splitlines():
        m = re.match(r"^([0-9a-f]+) <(.*)>:", line)
        if m:
            cur = m.group(2)
            funcs[cur] = []
            continue
        m = re.match(r"\s*([0-9a-f]+):\s+([0-9a-f]{4})(?: ([0-9a-f]{4}))?\s+(\S+)\s*(.*)", line)
        if m and cur and not m.group(4).startswith("."):
            ops = m.group(5).split("@")[0].split(";")[0].strip()
            funcs[cur].append({"addr": int(m.group(1), 16), "hw": [h for h in m.group(2, 3) if h],
                               "mn": m.group(4), "ops": ops})
    return funcs


def target(insn):
    if not BRANCH.match(insn["mn"]):
        return None
    m = re.search(r"\b([0-9a-f]{4,8})\b", insn["ops"])
    return int(m.group(1), 16) if m else None


def innermost_loops(insns):
    back = [(target(i), i["addr"]) for i in insns if target(i) is not None and target(i) < i["addr"]]
    return [(x, e) for x, e in back if not any(x <= x2 and e2 <= e and (x2, e2) != (x, e) for x2, e2 in back)]


def paths(insns, head, end):
    """Paths from head to the back branch at end, moving forward only inside [head, end]."""
    index = {i["addr"]: k for k, i in enumerate(insns)}
    found = []

    def walk(k, path):
        if k is None or k >= len(insns) or len(found) > 16:
            return
        insn = insns[k]
        if not head <= insn["addr"] <= end:
            return
        path = path + [insn]
        if insn["addr"] == end:
            found.append(path)
            return
        mn = insn["mn"]
        if mn.startswith(("bl", "bx", "blx", "pop", "tb")) or "pc" in insn["ops"].split(",")[0]:
            return  # leaves the loop or calls: not an inner loop's path
        t = target(insn)
        if t is not None and head < t <= end and t > insn["addr"]:
            walk(index.get(t), path)
        if t is None or not mn.startswith("b.") and mn != "b":
            walk(k + 1, path)

    walk(index.get(head), [])
    return found


def model_cycles(static_cycles, core, path):
    args = [static_cycles, "--core", core] + [
        "%x:%s" % (i["addr"], ",".join(i["hw"])) for i in path]
    out = subprocess.run(args, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip())
    fields = dict(kv.split("=") for kv in out.stdout.split())
    return float(fields["cycles_per_iteration"]), float(fields["refill_cycles"]), int(fields["unmodeled"])


def mca_cycles(llvm_mca, path, iterations=200):
    lines = []
    for i in path:
        ops = i["ops"]
        if target(i) is not None:
            ops = re.sub(r"[0-9a-f]{4,8}\s*<[^>]*>", ".Lend", ops)
        lines.append("  %s %s" % (i["mn"], ops))
    text = "  .syntax unified\n  .thumb\n" + "\n".join(lines) + "\n.Lend:\n"
    out = subprocess.run([llvm_mca, "-mtriple=thumbv7em-none-eabi", "-mcpu=cortex-m4",
                          "-iterations=%d" % iterations], input=text, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip() + "\n" + text)
    m = re.search(r"Total Cycles:\s+(\d+)", out.stdout)
    return int(m.group(1)) / iterations


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--elf", required=True)
    p.add_argument("--objdump", default="arm-none-eabi-objdump")
    p.add_argument("--static-cycles", required=True)
    p.add_argument("--llvm-mca", default="llvm-mca-14")
    p.add_argument("--core", default="cortex-m4f")
    p.add_argument("--tolerance", type=float, default=0.40)
    p.add_argument("functions", nargs="+")
    a = p.parse_args()
    funcs = disassemble(a.objdump, a.elf)
    rows, worst = [], 0.0
    for f in a.functions:
        if f not in funcs:
            print("no function %s in %s" % (f, a.elf), file=sys.stderr)
            return 2
        for head, end in innermost_loops(funcs[f]):
            found = paths(funcs[f], head, end)
            if not found:
                continue
            path = found[0]
            cycles, refills, unmodeled = model_cycles(a.static_cycles, a.core, path)
            mca = mca_cycles(a.llvm_mca, path)
            diff = (cycles - refills - mca) / mca
            worst = max(worst, abs(diff))
            rows.append((f, head, len(path), cycles, refills, mca, diff, unmodeled))
    if not rows:
        print("no inner loops found", file=sys.stderr)
        return 2
    print("%-16s %-10s %5s %9s %8s %9s %8s" % ("function", "loop", "insns", "model", "refills",
                                                "llvm-mca", "diff"))
    for f, head, n, cycles, refills, mca, diff, unmodeled in rows:
        print("%-16s 0x%08x %5d %9.1f %8.0f %9.2f %+7.1f%%%s" % (
            f, head, n, cycles, refills, mca, diff * 100,
            "  (%d unmodeled)" % unmodeled if unmodeled else ""))
    print("largest difference (model without refills vs llvm-mca): %.1f %% (tolerance %.0f %%)" % (
        worst * 100, a.tolerance * 100))
    return 0 if worst <= a.tolerance and all(r[7] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
