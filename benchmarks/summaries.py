"""The benchmarks' summaries' building blocks: lists, Markdown tables,
paired ratios over rounds, and what the records of several seeds say
(their rows, mean ± sd, paired differences). `benchmarks.common` names
each of them too (`common.table`, ...), as the races call them."""

import statistics


def listed(values, form="{}"):
    """`values` formatted and joined by commas."""
    return ", ".join(form.format(value) for value in values)


def table(header, rows, rule=None):
    """A Markdown table's lines: the `header` cells, the rule under it
    (`rule`: its cells, default `---` under each), then `rows` (lists of
    cells; `table_row`)."""
    rule = rule or ["---"] * len(header)
    return [table_row(header), "|" + "|".join(rule) + "|"] + [
        table_row(row) for row in rows
    ]


def table_row(cells):
    """`| a | b |`: one Markdown table row (an empty cell: `| |`)."""
    return (
        "|"
        + "|".join(f" {cell} " if cell != "" else " " for cell in cells)
        + "|"
    )


def paired_ratio(ours, peer):
    """`(median, per_round)`: the ratios `ours[k] / peer[k]` over the rounds
    both have, and their median. `ours`, `peer`: dicts round -> value."""
    rounds = sorted(set(ours) & set(peer))
    if not rounds:
        raise ValueError("No round is shared by the two: run them together.")
    per_round = [ours[r] / peer[r] for r in rounds]
    return statistics.median(per_round), per_round


# === Seeds ===


def record_seed(record):
    """The seed a record ran with (`seed`, else its settings'; 0 before
    records named it)."""
    return record.get("seed", record.get("settings", {}).get("seed", 0))


def by_seed(records, key=lambda record: record["contestant"]):
    """`{key(record): {seed: record}}`, keys in first-seen order. Records
    come in file-name order, so a record named with its seed
    (`x_seed0.json`) replaces one of the same key and seed from before
    records were named so (`x.json`)."""
    grouped = {}
    for record in records:
        grouped.setdefault(key(record), {})[record_seed(record)] = record
    return grouped


def spread(values, form="{:.2f}"):
    """One value as `form`, or several as `mean ± sd` (over seeds)."""
    if len(values) < 2:
        return form.format(values[0])
    mean, sd = statistics.mean(values), statistics.stdev(values)
    return f"{form.format(mean)} ± {form.replace('+', '').format(sd)}"


def seed_rows(label, seeds, cells):
    """Markdown rows of one contestant's records `seeds` (`{seed:
    record}`): one per seed (`label`, then ", seed N" when there are
    several) of `cells(record)`, `(value, form)` pairs (form None: text),
    and with two seeds or more a row of each number's mean ± sd."""
    order = sorted(seeds)
    several = len(order) > 1
    rows = [[(v, f) for v, f in cells(seeds[s])] for s in order]
    lines = [
        "| "
        + " | ".join(
            [label + f", seed {s}" * several]
            + [str(v) if f is None else f.format(v) for v, f in row]
        )
        + " |"
        for s, row in zip(order, rows)
    ]
    if several:
        numbers = [[(v, f) for v, f in col if f] for col in zip(*rows)]
        means = [
            spread([v for v, _ in col], col[0][1]) if col else ""
            for col in numbers
        ]
        lines.append(
            f"| {label}, mean ± sd over seeds {listed(order)} | "
            + " | ".join(means)
            + " |"
        )
    return lines


def paired_difference(ours, theirs, value, form="{:+.2f}"):
    """`value(ours[s]) - value(theirs[s])` over the seeds both ran
    (`{seed: record}` each): one difference, or each seed's and their
    mean ± sd. None where they share no seed."""
    seeds = sorted(set(ours) & set(theirs))
    deltas = [value(ours[s]) - value(theirs[s]) for s in seeds]
    if not seeds:
        return None
    if len(seeds) == 1:
        return form.format(deltas[0])
    each = listed(f"{form.format(d)} (seed {s})" for d, s in zip(deltas, seeds))
    return f"{each}; mean {spread(deltas, form)}"
