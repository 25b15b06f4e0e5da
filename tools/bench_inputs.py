"""Benchmark: how many strict cases get inputs with every result comparable, old and new.

    python -m tools.bench_inputs [--graphs 300] [--ops 20,10] [--ir relax,relay]

Generates fixed-seed strict graphs as a campaign does (coverage guided, coverage kept
across graphs) and chooses inputs for each with the OLD method (redraw every variable up
to 8 times inside the intersection of the declared domains it feeds; kept here as a copy)
and the NEW one (`hirfuzz.core.inputs.choose_inputs`), with the same per-case seed.
Reports, per method: the share of cases with every result comparable, the share of
results compared, ms per case (mean, median, p95), and for the new method the ops whose
domain could not be met. The ratio lines come last. The graphs come with the generator's
witness (`Graph.witness`), which the new method takes as its last resort; the old one never
looks at it. To see what the witness itself changed, run this at a commit before it.
"""
from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hirfuzz.core import inputs as I  # noqa: E402
from hirfuzz.core.coverage import Coverage  # noqa: E402
from hirfuzz.core.generate import generate_graph  # noqa: E402
from hirfuzz.core.graph import Ref  # noqa: E402
from hirfuzz.core.reference import interpret, op_env  # noqa: E402
from hirfuzz.core.spec import load_specs  # noqa: E402


# --- the method before the input search (a copy, for comparison only) ---------------------------

def old_leaf_domains(graph, specs):
    domains = {n.id: I.default_domain(n.type.dtype) for n in graph.variables}
    for node in graph.operators:
        spec = specs.ops[node.op]
        env = op_env(spec, node, graph)
        for slot, item in enumerate(node.inputs):
            for ref in item if isinstance(item, list) else [item]:
                if ref.node not in domains:
                    continue
                lo, hi = I.slot_domain(spec, slot, env, graph.type_of(ref).dtype)
                cur = domains[ref.node]
                domains[ref.node] = (max(cur[0], lo), min(cur[1], hi))
    return {k: (lo, max(lo, hi)) for k, (lo, hi) in domains.items()}


def old_choose_inputs(graph, specs, rng):
    domains = old_leaf_domains(graph, specs)
    best = None
    for _ in range(8):
        values = {n.id: I.draw(rng, n.type, domains[n.id]) for n in graph.variables}
        facts = interpret(graph, specs, values)
        found = I.find_violations(graph, specs, facts)
        key = (found.trap is not None, len(found.tainted))
        if best is None or key < best[0]:
            best = (key, values, facts, found)
        if found.clean:
            break
    _, values, facts, found = best
    for node_id in found.tainted:
        for i in range(len(graph.nodes[node_id].outputs)):
            facts[Ref(node_id, i)].stable = False
    op = graph.nodes[found.node].op if found.node is not None else ""
    return I.CaseInputs(values, facts, found.trap is None, found.first or "", op)


# --- measuring ----------------------------------------------------------------------------------

def measure(method, graphs, specs):
    full = compared = results = 0
    times, unmet = [], collections.Counter()
    for i, g in enumerate(graphs):
        t0 = time.perf_counter()
        chosen = method(g, specs, np.random.default_rng([7, i]))
        times.append((time.perf_counter() - t0) * 1000)
        # results below a domain violation (not those left out for rounding reasons)
        tainted = I.find_violations(g, specs, chosen.facts).tainted
        refs = g.results()
        results += len(refs)
        compared += sum(1 for r in refs if r.node not in tainted)
        if chosen.comparable:
            full += 1
        else:
            unmet[chosen.op or "?"] += 1
    return {"full": full / len(graphs), "compared": compared / max(results, 1),
            "mean_ms": statistics.mean(times), "median_ms": statistics.median(times),
            "p95_ms": float(np.percentile(times, 95)), "unmet": unmet}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--graphs", type=int, default=300)
    ap.add_argument("--ops", default="20,10")
    ap.add_argument("--ir", default="relax,relay")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    ratios = []
    for ir in args.ir.split(","):
        specs = load_specs(dialect=ir)
        for n_ops in (int(x) for x in args.ops.split(",")):
            rng, cov = np.random.default_rng(args.seed), Coverage()
            graphs = [generate_graph(specs, rng, n_ops, cov) for _ in range(args.graphs)]
            old, new = measure(old_choose_inputs, graphs, specs), measure(I.choose_inputs, graphs, specs)
            print(f"\n{ir}, {args.graphs} strict graphs of {n_ops} ops (seed {args.seed})")
            print(f"  {'method':6} {'every result compared':>22} {'results compared':>17} "
                  f"{'ms mean':>8} {'median':>7} {'p95':>7}")
            for label, m in (("old", old), ("new", new)):
                print(f"  {label:6} {m['full']:22.1%} {m['compared']:17.1%} {m['mean_ms']:8.2f} "
                      f"{m['median_ms']:7.2f} {m['p95_ms']:7.2f}")
            print("  domains never met (new), by op: " +
                  ", ".join(f"{op} {c}" for op, c in new["unmet"].most_common()))
            ratios.append(f"{ir} {n_ops} ops: every result compared {old['full']:.1%} -> {new['full']:.1%}, "
                          f"results compared {old['compared']:.1%} -> {new['compared']:.1%}, "
                          f"ms mean {old['mean_ms']:.2f} -> {new['mean_ms']:.2f}"
                          f" (x{new['mean_ms'] / old['mean_ms']:.2f}), median {old['median_ms']:.2f} -> {new['median_ms']:.2f}, p95 {old['p95_ms']:.2f} -> {new['p95_ms']:.2f}")
    print()
    for line in ratios:
        print(line)


if __name__ == "__main__":
    main()
