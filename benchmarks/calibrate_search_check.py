"""Does the fit's coarse-then-refine grid search find the full grid's optimum?

Rerun:  PYTHONPATH=. python benchmarks/calibrate_search_check.py     (~1 min; needs numpy)

Fits the shipped calibration (all reference rows), then, with its architecture efficiencies
fixed, searches each (model, precision) group both ways (`calibrate._fit_group`, with and
without ``exhaustive=True``) and prints whether they pick the same grid point and how much
higher the coarse search's loss is where they differ.
"""

from __future__ import annotations

from collections import defaultdict

from gpuselect.catalog import load_catalog
from gpuselect.estimate import calibrate as C
from gpuselect.estimate.perf import DATA


def main() -> None:
    catalog = load_catalog(use_overlay=False)

    def spec_for(label: str):
        m = catalog.match(label)
        return None if m is None else m.entry

    obs, _ = C.build_observations(C.read_reference_rows(DATA), spec_for)
    f = C.fit(obs)
    groups: dict[tuple[str, str], list[C.Obs]] = defaultdict(list)
    for ob in obs:
        groups[(ob.model, ob.pc)].append(ob)
    same = 0
    print("| model | precision | same point | coarse loss / full loss - 1 |")
    print("|---|---|---|---|")
    for key in sorted(groups):
        quick = C._fit_group(groups[key], f)
        full = C._fit_group(groups[key], f, exhaustive=True)
        agree = quick[:4] == full[:4]
        same += agree
        print(f"| {key[0]} | {key[1]} | {'yes' if agree else 'no'} | {100 * (quick[5] / full[5] - 1):+.2f} % |")
    print(f"\nsame grid point in {same} of {len(groups)} groups")


if __name__ == "__main__":
    main()
