"""The "what got slower" block: an explanation (as results.json keeps it) in lines, for the verdict's
message, summary.md and ``dlperf explain``."""
from __future__ import annotations

TITLE = "what got slower"


def lines(explanation: dict) -> list[str]:
    """The block's lines; an explanation that could not be made says why, and the verdict stands."""
    head = f"{TITLE} ({explanation.get('what', 'one profiled launch a side')})"
    out = [head + ":" if explanation.get("diff") else f"{head}: not explained: {explanation.get('why', '?')}"]
    out += [f"  ! {p}" for p in explanation.get("problems", [])]
    d = explanation.get("diff")
    if d:
        out += _table(d)
        out += _ranks(d)
    traces = explanation.get("traces") or {}
    if traces:
        out.append("  traces: " + "; ".join(f"{role} {where}" for role, where in traces.items()))
    return out


def _ms(v: float) -> str:
    return f"{v:.3f}" if abs(v) < 1 else f"{v:.1f}"


def _table(d: dict) -> list[str]:
    unit = d["unit"]
    width = max([len(unit)] + [min(len(c["name"]), 60) for c in d["top"]])
    out = [f"  step {_ms(d['reference_step_ms'])} -> {_ms(d['candidate_step_ms'])} ms; {d['beyond_noise']} of "
           f"{d['compared']} {unit} changed beyond the noise ({d['noise']}; launch-to-launch "
           f"{d.get('noise_used', d['launch_noise']):.1%}); {d['steps']['reference']} and {d['steps']['candidate']} "
           "steps profiled; the slower beyond it first, by how much at least they changed",
           *_why_wider(d),
           f"  {unit:<{width}}  {'ms/step ref':>11}  {'ms/step cand':>12}  {'change':>9}  {'calls/step':>13}  noise"]
    for c in d["top"]:
        name = c["name"] if len(c["name"]) <= 60 else c["name"][:57] + "..."
        calls = f"{c['reference_count']:g} -> {c['candidate_count']:g}"
        mark = c["calls"] or ("beyond" if c["beyond_noise"] else "within")
        out.append(f"  {name:<{width}}  {_ms(c['reference_ms']):>11}  {_ms(c['candidate_ms']):>12}  "
                   f"{c['change_ms']:>+9.2f}  {calls:>13}  +-{_ms(c['noise_ms'])} {mark}")
    for key in ("added", "removed"):
        if d.get(key):
            shown = d[key][:10]
            out.append(f"  {key}: {', '.join(shown)}" + (f" and {len(d[key]) - 10} more" if len(d[key]) > 10 else ""))
    return out


def _why_wider(d: dict) -> list[str]:
    """Where the launch-to-launch noise used is not the pairs' spread, which one it is."""
    drift, spread, pairs = d.get("drift") or 0.0, d.get("dispersion") or 0.0, d["launch_noise"]
    if max(drift, spread) <= pairs:
        return []
    if drift >= spread:
        return [f"  the profiled launches' steps moved {drift:.1%} apart beyond what the measured launches found (the "
                f"pairs' spread: {pairs:.1%}): the host moved them, and the noise takes that"]
    return [f"  the operators moved {spread:.1%} apart from each other between the two launches (the pairs' spread: "
            f"{pairs:.1%}): the host moves some operators more than others, and the noise takes that"]


def _ranks(d: dict) -> list[str]:
    out = []
    for r in d.get("ranks", []):
        line = (f"  rank {r['rank']}: step {_ms(r['reference_ms'])} -> {_ms(r['candidate_ms'])} ms, in collectives "
                f"{r['reference_collective']:.0%} -> {r['candidate_collective']:.0%}")
        if r.get("candidate_breakdown"):
            line += "; " + ", ".join(f"{k} {r['reference_breakdown'].get(k, 0.0):.0%} -> {v:.0%}"
                                     for k, v in r["candidate_breakdown"].items())
        out.append(line)
    s = d.get("straggler")
    if s:
        out.append(f"  straggler: rank {s['rank']} (the others wait {s['others_wait_ms']:.1f} ms a step at the "
                   f"collectives, it waits {s['wait_ms']:.1f} ms; rank {s['waits_most']} waits most)")
    return out
