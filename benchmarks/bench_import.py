"""How long `import symgrad` takes, next to `import sympy`, measured side by side.

Each round starts fresh interpreters for every command, in rotating order, so that a busy
machine slows all of them alike; the script prints medians and ratios to `import sympy`.

    python benchmarks/bench_import.py            # 21 rounds
    python benchmarks/bench_import.py --rounds 5

`import symgrad` loads its layers on first use, so the script also times the first tensor
(`sg.tensor(...)`, which loads SymPy, NumPy and the op table) and the first emitted module
(`sg.codegen`, which adds Jinja2), to show what a session pays in all.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

COMMANDS = {
    "import sympy": "import sympy",
    "import symgrad": "import symgrad",
    "import symgrad.torch": "import symgrad.torch",
    "first tensor": "import symgrad as sg; sg.tensor([[1.0]])",
    "first law + codegen": (
        "import symgrad as sg; k, n = sg.dims('k n'); W = sg.symbols('W', (k, n)); x = sg.symbols('x', (n,)); "
        "sg.codegen((W @ x).tanh(), [W], inputs=[W, x])"
    ),
    "python alone": "pass",
}


def run_once(code: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args()
    names = list(COMMANDS)
    times: dict[str, list[float]] = {name: [] for name in names}
    for round_number in range(args.rounds):
        shift = round_number % len(names)
        for name in names[shift:] + names[:shift]:
            times[name].append(run_once(COMMANDS[name]))
    base = statistics.median(times["import sympy"])
    print(f"{args.rounds} rounds, interleaved; medians in ms, and ratio to `import sympy`")
    print(f"{'what':<24}{'median ms':>10}{'ratio':>8}   (quartiles of the ratio)")
    for name in names:
        median = statistics.median(times[name])
        ratios = sorted(t / s for t, s in zip(times[name], times["import sympy"], strict=True))
        q1, q3 = ratios[len(ratios) // 4], ratios[(3 * len(ratios)) // 4]
        print(f"{name:<24}{median * 1000:>10.0f}{median / base:>8.2f}   ({q1:.2f}..{q3:.2f})")


if __name__ == "__main__":
    main()
