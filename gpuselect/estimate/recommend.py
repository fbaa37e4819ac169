"""The four-stage recommendation, starting from the user's own machine.

Order of advice: what the user already has (this CPU; their own healthy GPUs together as one
option), then what they lack (cards to buy, or to rent). The core returns numbers in US dollars
and a structured verdict; ``explain`` renders the words with a money formatter the face passes
(the settings' currency), so no US-dollar figure is baked into text a face shows.

Plausibility rule (``plausible_count``): a laptop GPU is only ever one card; consumer desktop
cards (GeForce, Radeon) go up to 4 in one box (the practical limit of a workstation board, its
slots and power supply) and never across machines; workstation cards up to one box
(``gpus_per_node``); only datacenter cards (PCIe, SXM, OAM: built into multi-GPU servers) scale
over several machines.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from gpuselect.types import CONSUMER_FAMILIES, Family, FormFactor, Stage
from gpuselect.workloads.model import sentence_start

if TYPE_CHECKING:  # api imports this module; the types are only annotations here
    from gpuselect.catalog.schema import GpuEntry
    from gpuselect.estimate.api import Assumptions, EstimateRow, LocalEstimate
    from gpuselect.workloads.model import Workload

# The stages' names live with gpuselect.types.Stage (the one source); these tables stay for callers.
STAGE_NAMES: dict[Stage, str] = {s: s.label for s in Stage}
#: The stages' short names, the same in the CLI, the GUI and the report.
STAGE_SHORT: dict[Stage, str] = {s: s.short for s in Stage}

CONSUMER_MAX_PER_BOX = 4

Money = Callable[[float], str]


def money_text(v: float, symbol: str = "$") -> str:
    """An amount as every face writes money: whole units from 10 up, cents below (an electricity
    bill of 0.42), never "0.00" for an amount that is not zero."""
    if v != 0 and abs(v) < 0.005:
        return f"under {symbol}0.01"
    return f"{symbol}{v:,.0f}" if abs(v) >= 10 or v == 0 else f"{symbol}{v:,.2f}"


def about_money(text: str) -> str:
    """ "about $12", but "under $0.01" as it is (not "about under $0.01")."""
    return text if text.startswith("under") else f"about {text}"


def within_band(fast_h: float, fast_band: float, slow_h: float) -> bool:
    """Whether ``slow_h`` lies inside the faster option's error range: the estimate cannot tell the
    two apart (a B200 at 21.0 s "faster" than an RTX 3090 at 21.3 s, both ±47 %)."""
    return slow_h <= fast_h * (1.0 + fast_band)


def usd(v: float) -> str:
    """US dollars, the core's own currency (faces re-render in theirs: ``app.money.MoneyFormat``)."""
    return money_text(v)


#: ``plausible_count``'s rule in words, for the faces.
PLAUSIBLE_RULE = (
    "a laptop GPU is only ever one card, consumer cards go up to 4 in one box, workstation cards up to "
    "one box, and only datacenter cards scale over several machines"
)


def implausible_counts(entries: Sequence[GpuEntry], counts: Sequence[int], gpus_per_node: int = 8) -> list[str]:
    """The asked (card, count) pairs nobody builds, as "16x GeForce RTX 4090" (for a note)."""
    return [f"{n}x {e.name}" for e in entries for n in counts if not plausible_count(e, n, gpus_per_node)]


def plausible_max(e: GpuEntry, gpus_per_node: int = 8, cluster_max: int = 1024) -> int:
    """The most cards of ``e`` anyone builds into one job (``plausible_count``'s bound)."""
    if e.form_factor == FormFactor.LAPTOP:
        return 1
    if e.family in CONSUMER_FAMILIES:
        return min(CONSUMER_MAX_PER_BOX, gpus_per_node)
    if e.family == Family.WORKSTATION:
        return gpus_per_node
    return cluster_max


def plausible_count(e: GpuEntry, count: int, gpus_per_node: int = 8) -> bool:
    """Whether ``count`` cards of ``e`` is an option anyone builds (module docstring)."""
    return count <= 1 or count <= plausible_max(e, gpus_per_node, cluster_max=count)


def offer_phrase(gpus: int) -> str:
    """ "a 4-GPU offer" / "an 8-GPU offer", as the row's note and the advice write it."""
    return f"{'an' if str(gpus).startswith('8') or gpus in (11, 18) else 'a'} {gpus}-GPU offer"


#: What a band marked "*" is where no measured step validates the row, one wording for every face
#: (the CLI's footnote, the report's "(*)", the desktop app's tooltip).
BORROWED_BAND_NOTE = (
    "the band is borrowed from the validated regime, the widest GPU band for offloaded and mixture-of-experts rows"
)
#: The cost table's marks, one wording for the CLI and the report: a rate per GPU of a larger
#: offer ("‡"), and a count the price data rents only unlinked ("no offer").
PARTIAL_OFFER_NOTE = "the hourly rate is per GPU of a larger offer: renting fewer may cost more"
#: A row trained in fp8 that bf16 would train faster (EstimateRow.faster_precision): CLI and report.
SLOWER_FP8_NOTE = (
    "fp8 trains slower here than bf16 would: its operands' amax and cast kernels cost more memory "
    "traffic than its faster GEMMs save on this card and model (--precision bf16 is faster)"
)
#: A row trained in fp16/bf16 (asked for) that fp32 would train faster: a small model's step is
#: bounded by the host's dispatch, so 16-bit kernels save nothing and autocast's casts add ops.
SLOWER_16BIT_NOTE = (
    "16-bit trains slower here than fp32 would: the host bounds the step, so faster kernels save nothing "
    "and mixed precision adds casts (--precision fp32, or auto, is faster)"
)


def slower_precision_note(faster: str) -> str:
    """The † footnote for rows that ``faster`` (EstimateRow.faster_precision) trains faster."""
    return SLOWER_FP8_NOTE if faster == "bf16" else SLOWER_16BIT_NOTE


#: How a rental's cost is counted (CLI footer and report): a 20 s job reads "under $0.01", which is
#: what its seconds cost, not what a provider bills it.
CLOUD_COST_NOTE = (
    "cloud costs are the offer's hourly rate times the training time, pro rata: a provider's minimum "
    "billing period, the instance's start-up and the data's upload are not counted"
)
#: What a purchase's cost counts (CLI footer and report): the RTX 5090's "$2,000" in one report and
#: "$1,999" in another were its price plus two different runs' electricity, said nowhere.
BUY_COST_NOTE = (
    "buy costs are the cards' price (launch price, or the street price a catalog overlay sets) plus this run's "
    "electricity"
)


def owned_note(n: int) -> str:
    """What a buy cost marked § means: the user's own cards are not in it."""
    return (
        f"you own {'this card' if n == 1 else f'{n} of these cards'}: the buy cost counts only the cards you "
        "lack, plus this run's electricity"
    )


NO_OFFER_NOTE = (
    "the price data rents this card only in smaller instances, not that many GPUs linked as the estimate assumes"
)


def time_range(hours: float, band: float) -> tuple[float, float]:
    """The ± band as a time range, symmetric in ratio: a +100 % band reads 0.5x..2x (never <= 0)."""
    return hours / (1.0 + band), hours * (1.0 + band)


@dataclass(frozen=True)
class OwnedGpu:
    """One of the user's GPUs as the recommendation sees it."""

    device: str  # "gpu0"
    name: str
    catalog_id: str | None  # None: not in the catalog
    problem: str | None = None  # a critical health finding: the card stays out of the plan
    scale: float = 1.0  # its speed / the catalog row's: its own estimate's (api._paced_by_local), else its matmul ratio
    memory_gb: float | None = None  # what the driver reports (GiB): the fit is judged against it


@dataclass
class Recommendation:
    #: 1 no GPU, 2 one consumer GPU, 3 workstation / rented GPUs, 4 cluster (``STAGE_SHORT``). Where
    #: nothing fits (action "none") it is 4 for the chart's scale, and JSON writes null.
    stage: Stage = field(metadata={"json_via": "stage_or_none"})
    stage_name: str
    choice: str  # the recommended option, in words (US dollars: faces re-render with ``explain``)
    per_stage: dict[str, dict[str, object] | None]
    rationale: str
    deadline_met: bool
    #: cpu (this machine's CPU), have (your own GPUs), buy, rent, miss (nothing meets it), none (nothing fits)
    action: str = "miss"
    option: dict[str, object] | None = None  # the recommended option (same keys as per_stage entries)
    own: dict[str, object] | None = None  # the user's healthy GPUs together as one option
    excluded: list[str] = field(default_factory=list)  # "gpu1 (A100 …): 5 uncorrectable ECC errors"
    crosses_deadline: bool = False  # the option's error range reaches past the deadline
    deadline_hours: float = 72.0
    budget_usd: float | None = None
    workload: str = ""
    #: Where the pick is to rent one consumer card: a rented option of a higher stage (one box) that
    #: is faster and costs less to rent, so a renter is not steered to the slower, dearer card.
    better_rental: dict[str, object] | None = None
    #: Where nothing fits: what to change, in words (the option closest to fitting and its row's
    #: first suggestion; LoRA/QLoRA only for a workload that trains every parameter).
    fit_hint: str = ""
    #: Where nothing meets both: "budget" (some option meets the deadline: the cheapest of those is
    #: the option), "deadline" (none does: the fastest with a price is) or "price" (options fit, but
    #: the catalog prices none of them: the one to look at is the option, its cost unknown).
    missed: str = ""
    #: Where the advice is a miss: an option the catalog has no price for that would meet the
    #: deadline (its cost cannot be weighed, so it is named, not recommended).
    unpriced: dict[str, object] | None = None
    #: Where a rented datacenter card is the advice because it is faster and cheaper to rent than
    #: the one consumer card that is also enough (whose purchase the budget or a missing price
    #: rules out): that consumer card, so the advice says one card of that kind would do.
    consumer_alt: dict[str, object] | None = None
    #: Where the fastest option misses the deadline: one at most 1.5x slower for at most half its
    #: cost, the better buy of the two.
    value_alt: dict[str, object] | None = None
    #: The fastest single GPU with a price (where the CPU is the answer: is a GPU faster at all?).
    fastest_gpu: dict[str, object] | None = None
    #: Where the advice rents one consumer card: the cheapest consumer card to buy that is enough,
    #: when another (the rented card's own purchase price was quoted: an RTX 5090's $1,999 beside a
    #: $300 RTX 5060 in time).
    cheaper_buy: dict[str, object] | None = None
    #: Where the CPU is the answer: the cheapest single GPU to get (a consumer card to buy first)
    #: that is clearly faster, the CPU's time outside its error range; None where none is.
    faster_gpu: dict[str, object] | None = None
    #: Where the fastest option misses the deadline by a lead over a much cheaper (or lower-stage)
    #: one smaller than its error band: the cheaper one is the option, and this is that fastest.
    tied_faster: dict[str, object] | None = None
    #: Where the auto batch leaves the steps overhead-bound and the advice goes past one GPU (or
    #: misses the deadline, or rents dearly): one GPU at a larger per-GPU batch that fits (its
    #: ``batch_size``) and would meet the deadline, or cost much less (``estimate`` fills it in).
    larger_batch: dict[str, object] | None = None
    #: Where the option bought or rented meets the deadline but its error range reaches past it: the
    #: cheapest option of the same kind of price (in the budget) whose whole range stays inside it,
    #: so "pick a faster option" names one (resnet50 in 24 h: an RTX 5090 rented for $18, up to
    #: 24.5 h, where a GH200 rented for $19 takes up to 11.1 h).
    in_range_alt: dict[str, object] | None = None
    #: Where the user's own GPUs miss the deadline or cannot hold the workload: the fewest more of
    #: the same card that would meet it (``owned``: how many they have; its buy cost counts only the
    #: cards added, and electricity), so a manager reads "add 1 more RTX 3090", not only a new card.
    add_owned: dict[str, object] | None = None
    #: Where the user's own GPUs cannot hold the workload: they, and what they would need per GPU
    #: ("your 2x GeForce RTX 4090 cannot hold it (needs 31.4 of 24 GB per GPU)").
    own_misfit: str = ""
    #: The user's healthy GPUs the catalog does not know ("gpu0 (NVIDIA Quadro X)"): not weighed,
    #: which the advice says rather than leave the manager to wonder why their card is not named.
    unknown_owned: list[str] = field(default_factory=list)

    @property
    def stage_or_none(self) -> Stage | None:
        """The stage, or None where nothing fits (what JSON writes: "stage": 4 read as a cluster)."""
        return None if self.action == "none" else self.stage


def row_cost(r: EstimateRow) -> float | None:
    costs = [c for c in (r.buy_cost_usd, r.cloud_cost_usd) if c is not None]
    return min(costs) if costs else None


_cost = row_cost  # the old private name


def stage_of(r: EstimateRow, a: Assumptions) -> Stage:
    if r.count * r.dies > a.gpus_per_node:  # the GPUs a node holds (an MI250X is two)
        return Stage.CLUSTER
    if r.count == 1 and r.family in CONSUMER_FAMILIES:
        return Stage.ONE_GPU
    return Stage.WORKSTATION_OR_RENTED


_stage_of = stage_of


def describe(r: EstimateRow | None, *, kind: str | None = None, owned: int | None = None) -> dict[str, object] | None:
    """A row as the verdict, the charts and the report need it (numbers, US dollars). ``owned``: how
    many of its cards the user has, by default those its buy cost leaves out (``account_for_owned``)."""
    if r is None:
        return None
    cost = row_cost(r)
    if kind is None:
        kind = (
            "rent"
            if r.cloud_cost_usd is not None and (r.buy_cost_usd is None or r.cloud_cost_usd <= r.buy_cost_usd)
            else "buy"
        )
    if kind == "buy" and r.buy_cost_usd is not None:
        cost = r.buy_cost_usd  # the option as a purchase, whatever renting it costs
    elif kind == "rent" and r.cloud_cost_usd is not None:
        cost = r.cloud_cost_usd
    lo, hi = time_range(r.total_time_h, r.error_band) if r.total_time_h is not None else (None, None)
    return {
        "gpu_id": r.gpu_id,
        "name": r.name,
        "count": r.count,
        "total_time_h": r.total_time_h,
        "cost_usd": cost,
        "meets_deadline": r.meets_deadline,
        "kind": kind,
        "owned": r.owned if owned is None else owned,
        "error_band": r.error_band,
        "time_low_h": lo,
        "time_high_h": hi,
        "buy_cost_usd": r.buy_cost_usd,
        "cloud_cost_usd": r.cloud_cost_usd,
        "batch_size": r.batch_size,  # per GPU per step
        "ranks": r.count * r.dies,  # the GPUs the framework sees (an MI250X card is two)
        "cloud_offer_gpus": r.cloud_offer_gpus,  # the rate's offer is larger than this rental (or smaller: unlinked)
        "cloud_unlinked": r.cloud_unlinked,  # only smaller offers: no rental price
        "parallelism": r.parallelism,  # single, ddp, fsdp
        "precision_used": r.precision_used,  # what it trains in (an fp8 request runs bf16 on an A100)
    }


_describe = describe


def _price_as(r: EstimateRow, kind: str) -> float | None:
    """The row's price of one kind: its purchase ("buy"), its rental ("rent"), else the cheaper."""
    return r.buy_cost_usd if kind == "buy" else r.cloud_cost_usd if kind == "rent" else row_cost(r)


def _recommendable(r: EstimateRow) -> bool:
    """A purchase needs a known price, a rental a known hourly rate: no price, no advice to get it;
    today's frameworks must run the card; and several GPUs must have a dataset that fills their
    batches (where each epoch is one step, more GPUs only take fewer optimizer steps)."""
    return (
        r.fits
        and r.supported
        and r.total_time_h is not None
        and row_cost(r) is not None
        and not (r.dataset_bound and r.count > 1)
    )


def _best(rows: list[EstimateRow], a: Assumptions) -> EstimateRow | None:
    ok = [r for r in rows if _recommendable(r)]
    within = [r for r in ok if r.meets_deadline and (a.budget_usd is None or (row_cost(r) or math.inf) <= a.budget_usd)]
    if within:  # cheapest that meets deadline and budget; ties -> faster
        return min(within, key=lambda r: (row_cost(r) or math.inf, r.total_time_h or math.inf))
    # Only the budget fails: the cheapest in time, as the advice names it ("the cheapest that meets
    # the deadline"); the fastest put 128 P100s to buy for $1.2 M on the stage-4 bar of a $5 budget
    # where 16 V100s rented for $104 were in time.
    in_time = [r for r in ok if r.meets_deadline]
    if in_time:
        return min(in_time, key=lambda r: (row_cost(r) or math.inf, r.total_time_h or math.inf))
    return min(ok, key=lambda r: r.total_time_h or math.inf) if ok else None


def own_option(
    owned: Sequence[OwnedGpu],
    entries: dict[str, GpuEntry],
    make_row: Callable[[GpuEntry, int], EstimateRow],
    a: Assumptions,
) -> EstimateRow | None:
    """The user's healthy, catalogued GPUs together as one option: the fastest group of one model
    that holds the workload (mixed cards do not form one data-parallel job here; where none holds
    it, the largest), priced at its electricity only."""
    groups: dict[str, list[OwnedGpu]] = {}
    for g in owned:
        if g.problem is None and g.catalog_id in entries:
            groups.setdefault(g.catalog_id, []).append(g)
    if not groups:
        return None
    # Each group's own row: the largest group alone made "your 2x RTX 3060 would need 51 h, beyond
    # your 45 h deadline; buy an RTX 5080" beside the same box's RTX 3090 at 39.5 h.
    made = [_group_option(cid, cards, entries, make_row, a) for cid, cards in groups.items()]
    usable = [r for r in made if r.fits and r.total_time_h is not None]
    if usable:
        return min(usable, key=lambda r: r.total_time_h or math.inf)
    return max(made, key=lambda r: (r.count * r.dies, entries[r.gpu_id].vram_gb))


def _group_option(
    cid: str,
    cards: Sequence[OwnedGpu],
    entries: dict[str, GpuEntry],
    make_row: Callable[[GpuEntry, int], EstimateRow],
    a: Assumptions,
) -> EstimateRow:
    """One group of the user's cards of one model as an option (``own_option``), of no more GPUs
    than the user allows an option (``--max-gpus``, ``--count``): "--max-gpus 1" on a two-RTX 4090
    machine was answered "use your 2x GeForce RTX 4090", data parallel."""
    dies = entries[cid].dies
    if a.counts:
        allowed = [c * dies for c in a.counts if c * dies <= len(cards)]
        cap = max(allowed) if allowed else len(cards)  # none as few as theirs: all of theirs
    else:
        cap = a.cluster_max_gpus  # the most GPUs of any option (a given --max-gpus sets it)
    if len(cards) > cap:
        cards = sorted(cards, key=lambda g: -g.scale)[:cap]  # the fastest of them
    die = entries[cid].one_die()  # each detected GPU is one die of a multi-die board (MI250)
    seen = [g.memory_gb for g in cards if g.memory_gb]
    if len(seen) == len(cards):  # what the cards report, as each one's own estimate is fitted
        die = die.as_reported(min(seen))
    r = make_row(die, len(cards))
    if dies > 1 and len(cards) % dies == 0:  # in cards, as the rows count them: "your 4x MI250X", not 8
        r = replace(r, count=len(cards) // dies, dies=dies, name=f"{entries[cid].name} ({dies} GCDs each)")
    elif dies > 1:  # some of a card's GCDs (ROCR_VISIBLE_DEVICES): counted as GCDs, "your 3x MI250X GCD"
        r = replace(r, name=f"{entries[cid].name} GCD")
    if not r.fits or r.total_time_h is None:
        return replace(r, buy_cost_usd=None, cloud_cost_usd=None, break_even_hours=None)
    scale = min(g.scale for g in cards)
    hours = r.total_time_h / scale
    kwh = (r.energy_kwh or 0.0) / scale
    return replace(
        r,
        total_time_h=hours,
        epoch_time_s=(r.epoch_time_s or 0) / scale,
        throughput_samples_per_s=(r.throughput_samples_per_s or 0) * scale,
        meets_deadline=hours <= a.deadline_hours,
        energy_kwh=kwh,
        co2_kg=kwh * a.grid_kg_co2_per_kwh,
        buy_cost_usd=kwh * a.electricity_usd_per_kwh,
        cloud_cost_usd=None,
        break_even_hours=None,
        price_note="owned: electricity only",
    )


def account_for_owned(
    rows: list[EstimateRow],
    owned_id: str | None,
    owned_n: int,
    price_usd: float | None,
    a: Assumptions,
    pace: float = 1.0,
) -> list[EstimateRow]:
    """Purchases are only what the user lacks: a row of the card they own counts the extra cards'
    price; rows they already cover (count <= what they own) are their own option, not a purchase.
    ``owned`` says how many of a row's cards are left out of its buy cost (the faces mark it).
    ``pace``: the owned cards' speed against the catalog's (their own estimates'); data parallel
    waits for the slowest, so a row with a card benchmarked at half speed takes twice as long. Its
    rental price stays the catalog's: a rented pair has no slow card."""
    if not owned_id or owned_n <= 0:
        return rows
    slow = min(1.0, pace)
    out = []
    for r in rows:
        if r.gpu_id == owned_id and r.buy_cost_usd is not None and price_usd is not None:
            extra = max(0, r.count - owned_n)
            # each card's share of the row's hardware cost as the row counted it (amortised or
            # whole): the whole price taken off an amortised share left -$1,495 to "buy"
            energy = (r.energy_kwh or 0.0) * a.electricity_usd_per_kwh
            per_card = max(0.0, r.buy_cost_usd - energy) / r.count
            if slow < 1.0 and r.fits and r.total_time_h is not None:
                # the advice's "add 1 more RTX 3090 (~39.1 h)" beside this row's 20.4 h (QA 17g)
                kwh = (r.energy_kwh or 0.0) / slow
                r = replace(
                    r,
                    total_time_h=r.total_time_h / slow,
                    epoch_time_s=None if r.epoch_time_s is None else r.epoch_time_s / slow,
                    throughput_samples_per_s=None
                    if r.throughput_samples_per_s is None
                    else r.throughput_samples_per_s * slow,
                    tokens_per_s=None if r.tokens_per_s is None else r.tokens_per_s * slow,
                    meets_deadline=r.total_time_h / slow <= a.deadline_hours,
                    energy_kwh=kwh,
                    co2_kg=kwh * a.grid_kg_co2_per_kwh,
                    buy_cost_usd=r.buy_cost_usd - energy + kwh * a.electricity_usd_per_kwh,
                )
            r = replace(
                r,
                buy_cost_usd=(r.buy_cost_usd or 0.0) - per_card * (r.count - extra),
                owned=r.count - extra,
                # buying pays for the extra cards only: 2x RTX 3090 with one owned broke even after
                # the hours two purchases would take; nothing to buy has no break-even
                break_even_hours=r.break_even_hours * extra / r.count if r.break_even_hours and extra else None,
                note=((r.note + "; ") if r.note else "")
                + (f"you own {owned_n}: buy {extra} more" if extra else f"you own {owned_n}: nothing to buy"),
            )
        out.append(r)
    return out


def recommend(
    rows: list[EstimateRow],
    local: list[LocalEstimate],
    a: Assumptions,
    w: Workload,
    *,
    own: EstimateRow | None = None,
    owned_n: int = 0,
    excluded: Sequence[str] = (),
    unknown_owned: Sequence[str] = (),
) -> Recommendation:
    cpu = next((loc for loc in local if loc.device == "cpu"), None)
    by_stage: dict[Stage, list[EstimateRow]] = {Stage.ONE_GPU: [], Stage.WORKSTATION_OR_RENTED: [], Stage.CLUSTER: []}
    for r in rows:
        if own is not None and r.gpu_id == own.gpu_id and r.count <= owned_n:
            continue  # already theirs: the own option stands for it
        by_stage[stage_of(r, a)].append(r)
    best = {s: _best(rs, a) for s, rs in by_stage.items()}
    cpu_entry: dict[str, object] | None = None
    if cpu is not None:
        lo, hi = time_range(cpu.total_time_h, cpu.error_band) if cpu.total_time_h is not None else (None, None)
        cpu_entry = {
            "device": "cpu",
            "name": cpu.name,
            "count": 1,
            "total_time_h": cpu.total_time_h,
            "cost_usd": 0.0,
            "meets_deadline": bool(cpu.fits and cpu.total_time_h is not None and cpu.total_time_h <= a.deadline_hours),
            "fits": cpu.fits,
            "kind": "cpu",
            "owned": 1,
            "error_band": cpu.error_band,
            "time_low_h": lo,
            "time_high_h": hi,
        }
    per_stage: dict[str, dict[str, object] | None] = {"1": cpu_entry, **{str(s): describe(b) for s, b in best.items()}}
    own_d = (
        describe(own, kind="have", owned=owned_n)
        if own is not None and own.fits and own.total_time_h is not None
        else None
    )
    if own_d is not None:  # the user's GPUs take their stage's slot when they are quicker or cheaper there
        key = str(stage_of(own, a))  # type: ignore[arg-type]
        cur = per_stage.get(key)
        if cur is None or not cur.get("meets_deadline") or own_d["meets_deadline"]:
            per_stage[key] = own_d

    rec = Recommendation(
        Stage.NO_GPU,  # every branch below sets the stage
        "",
        "",
        per_stage,
        "",
        False,
        excluded=list(excluded),
        unknown_owned=list(unknown_owned),
        own=own_d,
        deadline_hours=a.deadline_hours,
        budget_usd=a.budget_usd,
        workload=w.name,
    )

    def good(r: EstimateRow | None) -> bool:
        return bool(r and r.meets_deadline and (a.budget_usd is None or (row_cost(r) or math.inf) <= a.budget_usd))

    # Only the workload's own measured step is trusted without its band (a model fitted on the
    # benchmark's other steps is not: its band can be ±2,000 %).
    measured = bool(cpu and cpu.measured_step)
    cpu_ok = bool(
        cpu
        and cpu.fits  # the machine's memory holds the training state (where it was checked)
        and cpu.total_time_h is not None
        and cpu.total_time_h <= a.deadline_hours
        and (cpu.total_time_h * (1 + cpu.error_band) <= a.deadline_hours or measured)
    )
    if cpu_ok:
        rec.stage, rec.action, rec.option = Stage.NO_GPU, "cpu", cpu_entry
        priced = [r for r in rows if _recommendable(r) and r.count == 1]  # the student's question: one GPU
        if priced:
            rec.fastest_gpu = describe(min(priced, key=lambda r: r.total_time_h or math.inf))
            # The GPU to name beside the CPU: the cheapest to get (a consumer card to buy first)
            # of those clearly faster. The fastest named a $14,500 MI250X at 3.8 s beside a 4.1 s CPU.
            t_cpu = cpu.total_time_h if cpu is not None and cpu.total_time_h is not None else math.inf
            # never the user's own card, whose "price" is its electricity ("1x GeForce RTX 3090,
            # under $0.01 to buy" beside "your GeForce RTX 3090 would take about 21 s")
            quicker = [
                r
                for r in priced
                if not within_band(r.total_time_h or math.inf, r.error_band, t_cpu)
                and not (own is not None and r.gpu_id == own.gpu_id and r.count <= owned_n)
            ]
            if quicker:
                g = min(
                    quicker,
                    key=lambda r: (
                        stage_of(r, a) != Stage.ONE_GPU,
                        r.buy_cost_usd if r.buy_cost_usd is not None else math.inf,
                        row_cost(r) or math.inf,
                        r.total_time_h or math.inf,
                    ),
                )
                rec.faster_gpu = describe(g, kind="buy" if g.buy_cost_usd is not None else None)
    elif own_d is not None and own_d["meets_deadline"]:
        rec.stage, rec.action, rec.option = stage_of(own, a), "have", own_d  # type: ignore[arg-type]
    else:
        stage = next((s for s in by_stage if good(best[s])), None)  # the lowest stage that meets both
        if stage is not None:
            chosen = best[stage]
            rec.stage, rec.option = (
                stage,
                per_stage[str(stage)] if per_stage[str(stage)] is not own_d else describe(chosen),
            )
            rec.action = str(rec.option["kind"])  # type: ignore[index]
        else:
            cands = [b for b in best.values() if b is not None] + ([own] if own_d is not None else [])
            fastest = min(cands, key=lambda r: r.total_time_h or math.inf, default=None)  # type: ignore[union-attr]
            usable = [r for r in rows if r.fits and r.supported and r.total_time_h is not None]
            if fastest is None and usable:
                # Options fit, but none has a price or an hourly rate: name the one in time at the
                # lowest stage (else the fastest), not "nothing fits".
                # in time at the lowest stage with the fewest cards (no price to weigh: the least hardware)
                pick_row = min(
                    usable,
                    key=lambda r: (not r.meets_deadline, stage_of(r, a), r.count, r.total_time_h or math.inf),
                )
                rec.stage, rec.action, rec.missed = stage_of(pick_row, a), "miss", "price"
                rec.option = describe(pick_row)
            elif fastest is None:
                rec.stage, rec.action = Stage.CLUSTER, "none"
                rec.fit_hint = _fit_hint(rows, w)
            else:
                in_time = [r for r in rows if _recommendable(r) and r.meets_deadline]
                if a.budget_usd is not None and in_time:
                    # The budget is what fails: the cheapest option in time is what the user can weigh.
                    fastest = min(in_time, key=lambda r: (row_cost(r) or math.inf, r.total_time_h or math.inf))
                    rec.missed = "budget"
                else:
                    rec.missed = "deadline"
                    # The cost of being fastest: where an option not much slower costs a fraction of
                    # it, say so (1,024 GPUs for 11 % less time than 8 at 100x the money is no advice).
                    # Prices are compared like with like: a purchase with purchases, a rental with
                    # rentals ($14.8 M to buy read against $12 rented as "a fraction of the cost").
                    lead: EstimateRow = fastest
                    kind = "have" if lead is own else str((describe(lead) or {})["kind"])
                    t_best, c_best = lead.total_time_h or math.inf, _price_as(lead, kind)
                    near = [
                        r
                        for r in rows
                        if _recommendable(r) and r is not lead and (r.total_time_h or math.inf) <= 1.5 * t_best
                    ]

                    def like(r: EstimateRow) -> bool:  # both have the fastest's kind of price
                        return c_best is not None and _price_as(r, kind) is not None

                    def price(r: EstimateRow) -> float:
                        p = _price_as(r, kind) if like(r) else row_cost(r)
                        return math.inf if p is None else p

                    def cheaper(r: EstimateRow, share: float) -> bool:
                        base = c_best if like(r) else row_cost(lead)
                        return base is not None and price(r) <= share * base

                    # A lead inside the fastest's error band is no lead: the much cheaper (or
                    # lower-stage, no dearer) option is the answer (a B200 1 % faster than an RTX
                    # 3090 at 13x the cost, ±47 %, was the headline).
                    tie = [
                        r
                        for r in near
                        if within_band(t_best, lead.error_band, r.total_time_h or math.inf)
                        and (cheaper(r, 0.5) or (stage_of(r, a) < stage_of(lead, a) and cheaper(r, 1.0)))
                    ]
                    # of those, the cheapest to get (each described by its cheaper kind, said in words)
                    if tie:
                        rec.tied_faster = own_d if lead is own else describe(lead)
                        fastest = min(
                            tie, key=lambda r: (row_cost(r) or math.inf, stage_of(r, a), r.total_time_h or math.inf)
                        )
                    else:
                        much = [r for r in near if cheaper(r, 0.5)]
                        value = min(
                            much, key=lambda r: (row_cost(r) or math.inf, r.total_time_h or math.inf), default=None
                        )
                        if value is not None:
                            same = kind in ("buy", "rent") and _price_as(value, kind) is not None
                            rec.value_alt = describe(value, kind=kind if same else None)
                in_time_unpriced = [r for r in usable if r.meets_deadline and row_cost(r) is None]
                if in_time_unpriced:
                    rec.unpriced = describe(  # the least hardware in time, as the "price" branch names it
                        min(in_time_unpriced, key=lambda r: (stage_of(r, a), r.count, r.total_time_h or math.inf))
                    )
                rec.stage, rec.action = stage_of(fastest, a), "miss"
                rec.option = own_d if fastest is own else describe(fastest)
            if rec.option is not None and rec.option is not own_d:
                per_stage[str(rec.stage)] = rec.option  # the chart's bar for the stage is the option named
    pick = rec.option or {}
    rent, t = pick.get("cloud_cost_usd"), pick.get("total_time_h")
    if (
        rec.action == "rent"
        and rec.stage == Stage.ONE_GPU
        and isinstance(rent, float | int)
        and isinstance(t, float | int)
    ):
        rivals = [
            r
            for r in by_stage[Stage.WORKSTATION_OR_RENTED]
            if _recommendable(r)
            and good(r)
            and r.cloud_cost_usd is not None
            and r.cloud_cost_usd < rent
            and (r.total_time_h or math.inf) <= t
        ]
        # The card to buy, if one is: the cheapest purchase of the stage in time and budget. The pick
        # above ranked its cards by their cheaper cost, a rental here, so it named an RTX 5090 (a $39
        # rental) "the smallest card that is enough" to buy where a $1,602 RTX 4090 was in time.
        buyable = [
            r
            for r in by_stage[Stage.ONE_GPU]
            if _recommendable(r)
            and r.buy_cost_usd is not None
            and r.meets_deadline
            and (a.budget_usd is None or r.buy_cost_usd <= a.budget_usd)
        ]
        # cheapest first among those whose whole error range meets the deadline, then the rest (an
        # RX 9070 at 70.1 h of 72, up to 105 h, was "the cheapest card that is enough")
        to_buy = min(
            buyable,
            key=lambda r: (
                time_range(r.total_time_h or math.inf, r.error_band)[1] > a.deadline_hours,
                r.buy_cost_usd,
                r.total_time_h or math.inf,
            ),
            default=None,
        )
        if rivals:
            rival = min(rivals, key=lambda r: (r.cloud_cost_usd, r.total_time_h))
            if to_buy is not None:
                # A consumer card stays the stage's answer as the card to buy; renters get the rival
                # where it is faster than that card too (the advice says "faster and costs less").
                faster = (rival.total_time_h or math.inf) <= (to_buy.total_time_h or math.inf)
                rec.better_rental = describe(rival, kind="rent") if faster else None
                rec.action = "buy"
                rec.option = describe(to_buy, kind="buy")
                if (per_stage.get("2") or {}).get("gpu_id") == pick.get("gpu_id"):
                    per_stage["2"] = rec.option  # the chart's stage-2 bar says the same as the headline
            else:  # buying is out (no price, or over the budget): the cheaper, faster rental is the answer
                rec.consumer_alt = pick  # one consumer card is enough too: said beside the rental
                rec.stage, rec.option = Stage.WORKSTATION_OR_RENTED, describe(rival, kind="rent")
                per_stage[str(rec.stage)] = rec.option
        if (
            rec.action == "rent"
            and rec.stage == Stage.ONE_GPU
            and to_buy is not None
            and to_buy.gpu_id != pick.get("gpu_id")
            and (to_buy.buy_cost_usd or 0) < float(pick.get("buy_cost_usd") or math.inf)  # type: ignore[arg-type]
        ):
            rec.cheaper_buy = describe(to_buy, kind="buy")
    if own is not None and rec.action not in ("cpu", "have"):
        rec.own_misfit = _own_misfit(own)
        rec.add_owned = _add_owned(rows, own, owned_n, a, rec.option)
    # the name every face prints (docs/advice.md); the sentence form ("one reasonable GPU") was JSON's alone
    rec.stage_name = "No stage" if rec.action == "none" else STAGE_SHORT[rec.stage]
    rec.deadline_met = rec.action in ("cpu", "have", "buy", "rent") or bool(
        rec.missed == "price" and rec.option and rec.option.get("meets_deadline")
    )  # an unpriced option in time meets it: only its cost is unknown
    opt = rec.option
    if opt is not None and rec.deadline_met and opt.get("time_high_h") is not None:
        rec.crosses_deadline = float(opt["time_high_h"]) > a.deadline_hours  # type: ignore[arg-type]
    if rec.crosses_deadline and rec.action == "have" and own is not None:
        # "pick a faster option" named none for the user's own cards: more of them whose whole
        # range stays inside the deadline is the manager's faster option
        rec.add_owned = _add_owned(rows, own, owned_n, a, None, inside=True)
    if rec.crosses_deadline and rec.action in ("buy", "rent") and opt is not None:
        rec.in_range_alt = _in_range_alt(rows, a, rec.action, float(opt.get("total_time_h") or math.inf))  # type: ignore[arg-type]
    rec.choice, rec.rationale = explain(rec, usd)
    return rec


def _in_range_alt(rows: Sequence[EstimateRow], a: Assumptions, kind: str, than_h: float) -> dict[str, object] | None:
    """The cheapest option priced as ``kind`` (buy or rent), in the budget, faster than ``than_h``
    (the advice calls it "a faster option"), whose error range stays inside the deadline; ties ->
    faster."""
    safe = [
        r
        for r in rows
        if _recommendable(r)
        and (r.total_time_h or math.inf) < than_h
        and _price_as(r, kind) is not None
        and time_range(r.total_time_h or math.inf, r.error_band)[1] <= a.deadline_hours
        and (a.budget_usd is None or (_price_as(r, kind) or math.inf) <= a.budget_usd)
    ]
    best = min(safe, key=lambda r: (_price_as(r, kind) or math.inf, r.total_time_h or math.inf), default=None)
    return describe(best, kind=kind) if best is not None else None


def _own_misfit(own: EstimateRow) -> str:
    """ "your 2x GeForce RTX 4090 cannot hold it (needs 31.4 of 24 GB per GPU)", or "" where they can."""
    if own.fits or own.peak_memory_gb is None or not own.vram_gb:
        return ""
    from gpuselect.estimate.memory import need_text, vram_text

    name = option_name({"kind": "have", "count": own.count, "name": own.name})
    each = " per GPU" if own.count * own.dies > 1 else ""
    return f"{name} cannot hold it (needs {need_text(own.peak_memory_gb, own.vram_gb)} of {vram_text(own.vram_gb)} GB{each})"


def _add_owned(
    rows: Sequence[EstimateRow],
    own: EstimateRow,
    owned_n: int,
    a: Assumptions,
    option: dict[str, object] | None,
    *,
    inside: bool = False,
) -> dict[str, object] | None:
    """The fewest more of the user's card that would meet the deadline (and the budget, where it is
    priced), unless the advice already names it ("buy 1 more ..."). The rows of the user's card are
    paced by their own (``account_for_owned``), so the advice reads as the table's row of it."""

    def hours(r: EstimateRow) -> float:
        return r.total_time_h or math.inf

    more = [
        r
        for r in rows
        if r.gpu_id == own.gpu_id
        and r.count > owned_n
        and r.count * r.dies <= a.gpus_per_node  # in their box: "add 60 more A100" was 8 nodes of them
        and r.fits
        and r.supported
        and r.total_time_h is not None
        and (time_range(hours(r), r.error_band)[1] if inside else hours(r)) <= a.deadline_hours
        and not (r.dataset_bound and r.count > 1)
        and (a.budget_usd is None or r.buy_cost_usd is None or r.buy_cost_usd <= a.budget_usd)
    ]
    pick = min(more, key=lambda r: (r.count, hours(r)), default=None)
    if pick is None or (
        option is not None and (option.get("gpu_id"), option.get("count")) == (pick.gpu_id, pick.count)
    ):
        return None
    return describe(pick, kind="buy", owned=owned_n)


#: How much larger a per-GPU batch ``larger_batch`` tries (capped by what fits): one batch, a few
#: cards, so the catalog's estimate stays as fast (simple-cnn's 64 becomes 1,024).
LARGER_BATCH_FACTOR = 16
#: The cards ``larger_batch_candidates`` takes of each kind: the fastest, cheapest to buy, to rent.
LARGER_BATCH_CARDS = 3


def larger_batch_size(r: EstimateRow) -> int | None:
    """The one larger per-GPU batch tried for ``r``: 16x its batch, or the largest power of two
    that fits below that; None where memory leaves no batch twice as large."""
    if not r.batch_size or not r.max_batch or r.max_batch < 2 * r.batch_size:
        return None
    target = r.batch_size * LARGER_BATCH_FACTOR
    return target if r.max_batch >= target else 1 << (r.max_batch.bit_length() - 1)


def _row_of(rows: Sequence[EstimateRow], o: dict[str, object] | None) -> EstimateRow | None:
    if not o or o.get("kind") in ("cpu", "have"):
        return None
    return next((r for r in rows if r.gpu_id == o.get("gpu_id") and r.count == o.get("count")), None)


def larger_batch_candidates(rec: Recommendation, rows: Sequence[EstimateRow], a: Assumptions) -> list[EstimateRow]:
    """The few one-GPU rows worth trying at a larger batch: where the batch is auto and the advice's
    option is overhead-bound (its steps too small to keep a GPU busy) and goes past one GPU or
    misses (else, renting one such card: that card). Empty where none is."""
    o = rec.option
    row = _row_of(rows, o)
    if a.batch_size is not None or rec.action not in ("buy", "rent", "miss") or rec.missed == "price":
        return []
    if row is None or row.bound != "overhead":
        return []
    if row.count == 1 and rec.action != "miss":
        # one card in time: a larger batch only changes a rental's cost (a purchase costs the same)
        return [row] if rec.action == "rent" and larger_batch_size(row) else []
    singles = [
        r
        for r in rows
        if r.count == 1 and _recommendable(r) and r.bound == "overhead" and larger_batch_size(r) is not None
    ]
    picks: list[EstimateRow] = []
    for key in (
        lambda r: r.total_time_h or math.inf,
        lambda r: r.buy_cost_usd if r.buy_cost_usd is not None else math.inf,
        lambda r: r.cloud_cost_usd if r.cloud_cost_usd is not None else math.inf,
    ):
        picks += [r for r in sorted(singles, key=key)[:LARGER_BATCH_CARDS] if r not in picks]
    return picks


def pick_larger_batch(rec: Recommendation, tried: Sequence[EstimateRow], a: Assumptions) -> EstimateRow | None:
    """Of the candidates at their larger batch (``tried``), the one the advice names: renting the
    same card, where it costs at most half and a dollar less; else the cheapest one GPU that meets
    the deadline (its whole range first) and budget for no more than the option costs; else, on a
    missed deadline, the fastest that is clearly faster than the option."""
    o = rec.option or {}
    ok = [r for r in tried if _recommendable(r)]
    t_o = o.get("total_time_h")
    costs = [c for c in (o.get("buy_cost_usd"), o.get("cloud_cost_usd")) if isinstance(c, float | int)]
    if not ok or not isinstance(t_o, float | int):
        return None
    if o.get("count") == 1 and rec.action == "rent":
        rent = o.get("cloud_cost_usd")
        same = [r for r in ok if r.gpu_id == o.get("gpu_id") and r.cloud_cost_usd is not None]
        new = same[0].cloud_cost_usd if same else None
        # half the money, and at least a dollar saved: not a batch change for a cent's rental
        if new is not None and isinstance(rent, float | int) and new <= min(0.5 * rent, rent - 1.0):
            return same[0]
        return None
    good = [
        r
        for r in ok
        if r.meets_deadline
        and (a.budget_usd is None or (row_cost(r) or math.inf) <= a.budget_usd)
        and (not costs or (row_cost(r) or math.inf) <= min(costs))
    ]
    if good:  # those whose whole range meets the deadline first, as the card to buy is chosen
        return min(
            good,
            key=lambda r: (
                time_range(r.total_time_h or math.inf, r.error_band)[1] > a.deadline_hours,
                row_cost(r) or math.inf,
                r.total_time_h or math.inf,
            ),
        )
    if rec.action == "miss":
        fast = min(ok, key=lambda r: r.total_time_h or math.inf)
        if not within_band(fast.total_time_h or math.inf, fast.error_band, float(t_o)):
            return fast
    return None


#: How the fit hint begins where only cards today's frameworks no longer run hold the workload.
ONLY_UNSUPPORTED = "It fits only on GPUs today's frameworks no longer run"


def _fit_hint(rows: list[EstimateRow], w: Workload) -> str:
    """What would make the workload fit: the option that misses by the least, what it needs and its
    row's first suggestion; else the generic levers (LoRA/QLoRA only where every parameter trains)."""
    held = [r for r in rows if r.fits and not r.supported]
    names = ", ".join(dict.fromkeys(f"{r.count}x {r.name}" for r in held[:3]))
    misfits = [r for r in rows if not r.fits and r.supported and r.peak_memory_gb and r.vram_gb]
    if held and not misfits:
        # Memory was never the trouble: "does not fit any GPU" and levers to save memory misled.
        return f"{ONLY_UNSUPPORTED} ({names}): choose a GPU they run (--gpus)."
    hint = _memory_hint(rows, misfits, w)
    # a supported card that misses on memory keeps its remedy (a smaller batch), the old card said after
    return f"{hint} Only GPUs today's frameworks no longer run hold it as it is ({names})." if held else hint


def _memory_hint(rows: list[EstimateRow], misfits: list[EstimateRow], w: Workload) -> str:
    from gpuselect.workloads.presets import takes_seq_len

    misfits = misfits or [r for r in rows if not r.fits and r.peak_memory_gb and r.vram_gb]
    levers = "raise the GPU limit (--max-gpus), offload to CPU memory (--offload) or checkpoint activations"
    if w.trainable_params >= w.params and w.shape is not None:  # --mode lora refuses any other model
        levers += ", or train adapters only (LoRA/QLoRA)"
    if not misfits:
        return f"Try to {levers}."
    r = min(misfits, key=lambda r: (r.peak_memory_gb or 0.0) / (r.vram_gb or 1.0))
    from gpuselect.estimate.memory import need_text, vram_text

    what = f"The closest, {r.count}x {r.name}, needs {need_text(r.peak_memory_gb or 0.0, r.vram_gb or 0.0)} GB per GPU of its {vram_text(r.vram_gb or 0.0)} GB"
    if r.suggestions:
        return f"{what}; try {r.suggestions[0]}."
    # The row's suggestions tried a smaller batch, checkpointing, sharding over more such GPUs,
    # offload, precisions (and adapters for a full fine-tune): none fits. The generic levers
    # offered them anyway (and checkpointing where it was on).
    acts = sum(r.memory_breakdown_gb.get(k, 0.0) for k in ("activations", "logits"))
    why = (
        f" (one sample's activations and logits take {acts:,.1f} GB, which no sharding or offload divides)"
        if r.batch_size == 1 and r.vram_gb and acts >= 0.5 * r.vram_gb
        else ""
    )
    # only where --seq-len is taken: a BERT or ViT preset, or a ViT config, refuses it
    shorter = "a shorter sequence (--seq-len) or " if takes_seq_len(w) else ""
    return (
        f"{what}{why}; no change gpuselect models (a smaller batch, checkpointing, sharding over more such GPUs, "
        f"offload, another precision) makes it fit there: try {shorter}a GPU with more memory."
    )


def named_options(rec: Recommendation) -> list[dict[str, object]]:
    """The catalog options the advice's words name, as rows of the table at its batch (the faces
    mark them): the option, the alternatives beside it, and at stage 1 the GPU named beside the CPU.
    ``larger_batch`` is not among them: the table's row of that card is at the other batch."""
    beside_cpu = (rec.faster_gpu or rec.fastest_gpu) if rec.action == "cpu" else None
    return [
        o
        for o in (
            rec.option,
            rec.better_rental,
            rec.consumer_alt,
            rec.value_alt,
            rec.tied_faster,
            rec.unpriced,
            rec.cheaper_buy,
            rec.in_range_alt,
            rec.add_owned,
            beside_cpu,
        )
        if o and o.get("kind") not in ("cpu", "have")
    ]


def option_name(o: dict[str, object]) -> str:
    if o.get("kind") == "cpu":
        return f"this machine's CPU ({o.get('name')})"
    if o.get("kind") == "have":
        n = _int(o.get("count"), 1)
        return f"your {o.get('name')}" if n == 1 else f"your {n}x {o.get('name')}"
    return f"{o.get('count', 1)}x {o.get('name')}"


def _int(v: object, default: int) -> int:
    return int(v) if isinstance(v, (int, float)) else default


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def fmt_hours(h: float | None) -> str:
    """A duration a person reads at once: seconds, minutes, hours or days (never "0.0 h")."""
    if h is None or not math.isfinite(h):
        return "n/a"
    s = h * 3600
    if s < 1:
        return "under 1 s"
    if s < 90:
        return f"{s:.0f} s"
    if h < 1.5:
        m = s / 60
        # tenths below 10 min: "2 min (range 2-4 min)" read as if the range missed the time
        return f"{m:.1f}".removesuffix(".0") + " min" if m < 9.95 else f"{m:.0f} min"
    if h < 100:
        return f"{h:.0f} h" if abs(h - round(h)) < 1e-9 else f"{h:.1f} h"
    if h < 1000:
        return f"{h:.0f} h"
    if h < YEAR_H * 2:
        return f"{h / 24:,.0f} days"
    y = h / YEAR_H  # "15,655 years", not "5,718,159 days"
    if y >= MANY_YEARS:
        return "over a million years"  # not a 300-digit figure no estimate is precise to
    return (f"{y:.1f}".removesuffix(".0") if y < 10 else f"{y:,.0f}") + " years"


#: Past this many years a time reads "over a million years".
MANY_YEARS = 1e6


#: Hours in a (Julian) year: past two of them a time reads in years.
YEAR_H = 365.25 * 24


def fmt_hours_range(lo: float, hi: float, *, unit_of: float | None = None) -> str:
    """Two durations in one unit, the larger's ("69–102 min", "30.0–53.4 h", "753–1,634 days"), or
    that of ``unit_of`` (the time the range is of), so a range never reads "69 min to 1.7 h"; the
    two apart where the smaller would round to nothing."""
    if math.isfinite(lo) and lo >= MANY_YEARS * YEAR_H:
        return fmt_hours(lo)  # "over a million years", once
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi >= MANY_YEARS * YEAR_H:
        return f"{fmt_hours(lo)} to {fmt_hours(hi)}"
    ref = hi if unit_of is None or not math.isfinite(unit_of) else unit_of
    if ref * 3600 < 90:  # seconds, as fmt_hours writes them
        if hi * 3600 < 1:
            return "under 1 s"  # not "under 1 s to under 1 s"
        return f"{fmt_hours(lo)} to {fmt_hours(hi)}" if lo * 3600 < 1 else f"{lo * 3600:,.0f}–{hi * 3600:,.0f} s"
    if ref < 1.5:
        a, b, unit = lo * 60, hi * 60, "min"
        fmt = "{:,.1f}" if ref * 60 < 9.95 else "{:,.0f}"  # as fmt_hours writes the time itself
    elif ref < 1000:
        a, b, unit = lo, hi, "h"
        fmt = "{:,.0f}" if ref >= 100 else "{:,.1f}"
    elif ref < YEAR_H * 2:
        a, b, unit, fmt = lo / 24, hi / 24, "days", "{:,.0f}"
    else:
        a, b, unit = lo / YEAR_H, hi / YEAR_H, "years"
        fmt = "{:,.1f}" if ref / YEAR_H < 10 else "{:,.0f}"
    if float(fmt.format(a).replace(",", "")) <= 0:
        return f"{fmt_hours(lo)} to {fmt_hours(hi)}"
    return f"{fmt.format(a)}–{fmt.format(b)} {unit}"


def fmt_deadline(h: float) -> str:
    """A deadline before the word "deadline": "72 h", but "42-day" (not "42 days deadline")."""
    t = fmt_hours(h)
    for unit in ("day", "year"):
        if t.endswith(f" {unit}s"):
            return t.removesuffix(f" {unit}s") + f"-{unit}"
    return t


def _cpu_lead(cpu: dict[str, object], deadline_h: float) -> str:
    """Why the CPU is not the answer, as the stage-1 test decided it: it cannot hold the training
    state in RAM, it misses the deadline, or only its error range reaches past it."""
    t = float(cpu["total_time_h"])  # type: ignore[arg-type]
    deadline = fmt_deadline(deadline_h)
    if cpu.get("fits") is False:
        return "The CPU cannot hold the training state in this machine's RAM. "
    if t > deadline_h:
        return f"The CPU would need ~{fmt_hours(t)}, beyond your {deadline} deadline. "
    hi = cpu.get("time_high_h")
    upto = f" (up to {_past(hi, deadline_h)} with its error range)" if isinstance(hi, float | int) else ""
    return f"The CPU would need ~{fmt_hours(t)}{upto}, too close to your {deadline} deadline to count on. "


def _approx(t: str, mark: str = "about ") -> str:
    """ "about 5 h" / "~5 h", but "under 1 s" as it is (not "about under 1 s")."""
    return t if t.startswith("under") else f"{mark}{t}"


def _range(o: dict[str, object]) -> str:
    lo, hi, t = o.get("time_low_h"), o.get("time_high_h"), o.get("total_time_h")
    if lo is None or hi is None:
        return ""
    # in the unit the time itself is written in: "77 min (range 63–96 min)", not "(range 1.1–1.6 h)"
    unit = float(t) if isinstance(t, float | int) else float(hi)  # type: ignore[arg-type]
    span = fmt_hours_range(float(lo), float(hi), unit_of=unit)  # type: ignore[arg-type]
    # a range that reads as the time itself says nothing ("under 1 s (range under 1 s)")
    return "" if span == fmt_hours(unit) else f" (range {span})"


def explain(rec: Recommendation, money: Money = usd) -> tuple[str, str]:
    """(choice, rationale) in words, money through the face's formatter."""
    deadline = fmt_deadline(rec.deadline_hours)
    o = rec.option
    parts: list[str] = []
    if rec.action == "none" or o is None:
        if rec.fit_hint.startswith(ONLY_UNSUPPORTED):
            choice = "no option considered that today's frameworks run fits this workload"
            parts.append(f"{sentence_start(rec.workload)} does not fit any GPU considered that today's frameworks run.")
        else:
            choice = "no option considered fits this workload"
            parts.append(f"{sentence_start(rec.workload)} does not fit any GPU considered with these settings.")
        if rec.fit_hint:
            parts.append(rec.fit_hint)
    else:
        name = option_name(o)
        t = fmt_hours(o.get("total_time_h"))  # type: ignore[arg-type]
        cost = o.get("cost_usd")
        if rec.action == "cpu":
            choice = f"train on {name} ({_approx(t, '~')})"
            g = rec.fastest_gpu
            gt = g.get("total_time_h") if g else None
            fg = rec.faster_gpu
            if fg is not None:  # the cheapest to get of the GPUs clearly faster, with its price
                buy = fg.get("buy_cost_usd") if fg.get("kind") == "buy" else None
                gpu = (
                    f"A GPU would be faster ({option_name(fg)}, {_approx(fmt_hours(fg.get('total_time_h')))}"  # type: ignore[arg-type]
                    + (f", {money(float(buy))} to buy" if isinstance(buy, float | int) else "")
                    + "), but you do not need one."
                )
            elif g is None or not isinstance(gt, float | int):
                gpu = "You do not need a GPU."
            elif gt < float(o.get("total_time_h") or math.inf):  # type: ignore[arg-type]
                # "A GPU would be faster (about 4 s)" beside a CPU's 4 s: a lead inside the band
                gpu = (
                    f"No GPU is clearly faster: even the fastest single GPU, {option_name(g)}, takes "
                    f"{_approx(fmt_hours(gt))}, a difference inside the error range. You do not need one."
                )
            else:  # at a small batch a GPU waits on its host: the CPU's own answer, say so
                gpu = (
                    f"No single GPU is faster at this batch (the fastest, {option_name(g)}, takes "
                    f"{_approx(fmt_hours(gt))}): its steps are too small to keep a GPU busy."
                )
            parts.append(
                f"{sentence_start(rec.workload)} is small enough that the CPU finishes in {_approx(t)}{_range(o)}, inside your {deadline} deadline. "
                + gpu
            )
            if rec.own:
                own_t = rec.own.get("total_time_h")
                own_h = float(own_t) if isinstance(own_t, float | int) else None
                parts.append(f"{_cap(option_name(rec.own))} would take {_approx(fmt_hours(own_h))}.")
        elif rec.action == "have":
            choice = f"Use {name} ({_approx(t, '~')})"
            energy = f"; electricity {about_money(money(float(cost)))}" if isinstance(cost, (int, float)) else ""
            verb = "finish" if _int(o.get("count"), 1) > 1 else "finishes"
            parts.append(
                f"You already have what you need: {name} {verb} in {_approx(t)}{_range(o)}, inside your {deadline} deadline{energy}."
            )
        elif rec.action in ("buy", "rent"):
            verb = "rent" if rec.action == "rent" else "buy"
            # the cards they own, not those the own option uses (one of two at --count 1,4), and also
            # where theirs cannot hold it (no own option): "Buy 4x RTX 4090" was priced for two
            have = _int(o.get("owned"), 0)
            if verb == "buy" and 0 < have < _int(o.get("count"), 1):
                choice = f"buy {_int(o.get('count'), 1) - have} more {o.get('name')} ({o.get('count')} in all)"
            else:
                choice = f"{verb} {name}"
            costs = []
            if o.get("cloud_cost_usd") is not None:
                caveat = _offer_caveat(o) if rec.action != "rent" else ""  # a rental's own sentence says it below
                costs.append(f"{money(float(o['cloud_cost_usd']))} rented{caveat}")  # type: ignore[arg-type]
            if o.get("buy_cost_usd") is not None:
                above = rec.budget_usd is not None and float(o["buy_cost_usd"]) > rec.budget_usd  # type: ignore[arg-type]
                costs.append(
                    f"{money(float(o['buy_cost_usd']))} to buy and run"  # type: ignore[arg-type]
                    + (f" ({_over(float(o['buy_cost_usd']), rec.budget_usd, money)} your budget)" if above else "")  # type: ignore[arg-type]
                )
            cost_txt = (
                (" for " + ("" if costs[0].startswith("under") else "about ") + " or ".join(costs)) if costs else ""
            )
            lead = ""
            if rec.own:
                lead = f"{_cap(option_name(rec.own))} would need ~{fmt_hours(rec.own.get('total_time_h'))}, beyond your {deadline} deadline. "  # type: ignore[arg-type]
            elif rec.own_misfit:  # the user's GPUs, not the CPU, are what they asked about
                lead = f"{_cap(rec.own_misfit)}. "
            elif rec.per_stage.get("1") and rec.per_stage["1"].get("total_time_h"):  # type: ignore[union-attr]
                lead = _cpu_lead(rec.per_stage["1"], rec.deadline_hours)  # type: ignore[arg-type]
            where = {
                Stage.ONE_GPU: "one consumer card is enough",
                Stage.WORKSTATION_OR_RENTED: "a workstation with these cards or rented datacenter GPUs",
                Stage.CLUSTER: "more than one machine",
            }[rec.stage]
            parts.append(f"{lead}{_cap(name)} finishes in {_approx(t)}{_range(o)}{cost_txt}: {where}.")
            choice = _cap(choice) + f" ({_approx(t, '~')})"
            ca = rec.consumer_alt
            if ca is not None:
                ca_rent, ca_buy = ca.get("cloud_cost_usd"), ca.get("buy_cost_usd")
                over = (
                    f"; {money(float(ca_buy))} to buy, {_over(float(ca_buy), rec.budget_usd, money)} your budget"
                    if isinstance(ca_buy, float | int)
                    else "; the catalog has no purchase price for it"
                )
                parts.append(
                    f"One consumer card is also enough: {option_name(ca)} takes "
                    f"{_approx(fmt_hours(ca.get('total_time_h')))}"  # type: ignore[arg-type]
                    + (
                        f" for {money(float(ca_rent))} rented{_offer_caveat(ca)}"
                        if isinstance(ca_rent, float | int)
                        else ""
                    )
                    + f"{over}; {name} is faster and cheaper to rent."
                )
            alt = rec.better_rental
            if alt is not None:
                alt_t = fmt_hours(alt.get("total_time_h"))  # type: ignore[arg-type]
                alt_cost = money(float(alt["cloud_cost_usd"]))  # type: ignore[arg-type]
                choice += f", or rent {option_name(alt)} ({_approx(alt_t, '~')}, {alt_cost})"
                rent = o.get("cloud_cost_usd")
                same = isinstance(rent, float | int) and money(float(rent)) == alt_cost
                parts.append(
                    f"Renting, {option_name(alt)} is faster and costs {'about the same' if same else 'less'}: "
                    f"{_approx(alt_t)}{_range(alt)} for {alt_cost}; "
                    f"{name} is the cheapest card that is enough, the one to buy."
                )
            cb = rec.cheaper_buy
            if cb is not None and isinstance(cb.get("buy_cost_usd"), float | int):
                parts.append(
                    f"To buy, {option_name(cb)} is the cheapest card that is enough: "
                    f"{_approx(fmt_hours(cb.get('total_time_h')))}{_range(cb)} for "  # type: ignore[arg-type]
                    f"{money(float(cb['buy_cost_usd']))}."  # type: ignore[arg-type]
                )
        else:  # miss
            if rec.own_misfit:
                parts.append(f"{_cap(rec.own_misfit)}.")
            unpriced = ", no rental offer of that size" if o.get("cloud_unlinked") else ", no price in the catalog"
            choice = f"{name} ({_approx(t, '~')}" + (f"{unpriced})" if rec.missed == "price" else ")")
            budget = f" and the {money(rec.budget_usd)} budget" if rec.budget_usd else ""
            both = "both " if rec.budget_usd else ""
            price = _priced(o, money)
            price = f" for {price}" if price else ""
            if rec.missed == "price":
                inside = (
                    f"inside your {deadline} deadline"
                    if o.get("meets_deadline")
                    else f"beyond your {deadline} deadline"
                )
                parts.append(
                    f"{_cap(name)} fits and finishes in {_approx(t)}{_range(o)}, {inside}, but "
                    + _no_price_reason(o)
                    + ", so its cost cannot be weighed: add a price or an offer in catalog_overlay.toml in the "
                    'config folder (README, "Where gpuselect keeps your files") to compare it with priced cards.'
                )
            elif rec.missed == "budget":
                parts.append(
                    f"No option meets both the {deadline} deadline{budget}. The cheapest that meets the deadline is "
                    f"{name}, {_approx(t)}{_range(o)}{price}. Raise the budget, or shrink the workload."
                )
            else:
                tf = rec.tied_faster
                which = (
                    "The fastest options with a known price differ by less than their error range; the cheapest of them is"
                    if tf is not None
                    else "The fastest option with a known price is"
                )
                parts.append(
                    f"No option meets {both}the {deadline} deadline{budget}. {which} "
                    f"{name}, {_approx(t)}{_range(o)}{price}. "
                    f"Relax the deadline{' or budget' if rec.budget_usd else ''}, or shrink the workload."
                )
                if tf is not None:
                    tf_price = _priced(tf, money)
                    parts.append(
                        f"{_cap(option_name(tf))} is estimated a little faster, "
                        f"{_approx(fmt_hours(tf.get('total_time_h')))}"  # type: ignore[arg-type]
                        + (f", for {tf_price}" if tf_price else "")
                        + ": a difference inside that range."
                    )
                v = rec.value_alt
                if v is not None and isinstance(v.get("cost_usd"), float | int):
                    other = v.get("cloud_cost_usd") if v.get("kind") == "buy" else None
                    parts.append(
                        f"{_cap(option_name(v))} takes {_approx(fmt_hours(v.get('total_time_h')))} "  # type: ignore[arg-type]
                        f"for {_priced(v, money)}"
                        + (f" ({money(float(other))} rented)" if isinstance(other, float | int) else "")
                        + ", a fraction of the cost."
                    )
            if rec.unpriced is not None and rec.missed != "price":
                u = rec.unpriced
                parts.append(
                    f"{_cap(option_name(u))} would meet the deadline ({_approx(fmt_hours(u.get('total_time_h')))}), "  # type: ignore[arg-type]
                    f"but {_no_price_reason(u)}."
                )
        for r_ in (o if rec.action == "rent" else None, rec.better_rental):
            offer = r_.get("cloud_offer_gpus") if r_ else None
            if r_ and isinstance(offer, int) and not r_.get("cloud_unlinked"):
                every = "both" if offer == 2 else f"all {offer}"
                parts.append(
                    f"The hourly rate of {option_name(r_)} is per GPU of {offer_phrase(offer)}: renting fewer "
                    f"may cost more, or mean renting {every}."
                )
        lb = rec.larger_batch
        if lb is not None:
            lb_price = _priced(lb, money)
            parts.append(
                f"At batch {o.get('batch_size')} the steps are too small to keep a GPU busy (overhead-bound). "
                f"A larger per-GPU batch (--batch-size {lb.get('batch_size')}) keeps one GPU busy: "
                f"{option_name(lb)} would take {_approx(fmt_hours(lb.get('total_time_h')))}{_range(lb)}"  # type: ignore[arg-type]
                + (f" for {lb_price}" if lb_price else "")
                + (
                    f", inside your {deadline} deadline"
                    if isinstance(lb_hi := lb.get("time_high_h"), float | int) and lb_hi <= rec.deadline_hours
                    else ""
                )
                + ", if your model trains as well at that batch (rescale the learning rate and warm-up)."
            )
        parts.extend(_parallel_caveats(o, rec.stage))
        if rec.crosses_deadline:
            safe = rec.in_range_alt
            pick = "pick a faster option"
            ao = rec.add_owned
            if rec.action == "have" and ao is not None:
                added = _int(ao.get("count"), 1) - _int(ao.get("owned"), 0)
                buy = ao.get("buy_cost_usd")
                pick = (
                    f"add {added} more {ao.get('name')}: {ao.get('count')} in all stay inside it, "
                    f"{_approx(fmt_hours(ao.get('total_time_h')))} (up to {fmt_hours(ao.get('time_high_h'))})"  # type: ignore[arg-type]
                    + (
                        f" for {money(float(buy))} ({'the card' if added == 1 else f'the {added} cards'} and electricity)"
                        if isinstance(buy, float | int)
                        else "; the catalog has no price for it"
                    )
                )
            elif safe is not None:
                sh = safe.get("time_high_h")
                pick = (
                    f"pick a faster option: {option_name(safe)} stays inside it, "
                    f"{_approx(fmt_hours(safe.get('total_time_h')))} (up to {fmt_hours(sh)})"  # type: ignore[arg-type]
                    f" for {_priced(safe, money)}{_offer_caveat(safe) if safe.get('kind') == 'rent' else ''}"
                )
            parts.append(
                f"Its error range reaches past your {deadline} deadline (up to {_past(o.get('time_high_h'), rec.deadline_hours)}): "
                f"leave room, or {pick}."
            )
    ao = rec.add_owned
    if ao is not None and rec.action not in ("none", "have"):  # "have": said as its faster option above
        added = _int(ao.get("count"), 1) - _int(ao.get("owned"), 0)
        buy = ao.get("buy_cost_usd")
        price = (
            f", for {_approx(money(float(buy)))} ({'the card' if added == 1 else f'the {added} cards'} you add, and electricity)"
            if isinstance(buy, float | int)
            else "; the catalog has no price for it"
        )
        parts.append(
            f"Adding to yours: {added} more {ao.get('name')} ({ao.get('count')} in all) would finish in "
            f"{_approx(fmt_hours(ao.get('total_time_h')))}{_range(ao)}, inside your {deadline} deadline{price}."  # type: ignore[arg-type]
        )
        choice += f"; or add {added} more {ao.get('name')} (~{fmt_hours(ao.get('total_time_h'))})"  # type: ignore[arg-type]
    for x in rec.excluded:
        parts.append(f"Left out of the plan: {x}.")
    for x in rec.unknown_owned:
        parts.append(
            f"Not weighed: {x} is not in the catalog, so its speed is unknown; add it in catalog_overlay.toml "
            'in the config folder (README, "Where gpuselect keeps your files") to have it estimated.'
        )
    lb = rec.larger_batch
    if lb is not None and rec.action != "none":
        # in the headline too: a first-time user reads it and not the paragraph (QA 14: 8x V100 rented
        # for 18x the cost of one RTX 3090 at batch 1,024, which is also faster)
        choice += (
            f"; or {option_name(lb)} at batch {lb.get('batch_size')} "
            f"({_approx(fmt_hours(lb.get('total_time_h')), '~')})"  # type: ignore[arg-type]
        )
    return choice, " ".join(parts)


def _over(cost: float, budget: float | None, money: Money) -> str:
    """ "over", or "just over" where the two amounts round alike: "$2,000 to buy and run (over your
    budget)" beside a $2,000 budget contradicted itself ($2,000.36 against $2,000)."""
    return "just over" if budget is not None and money(cost) == money(budget) else "over"


def _past(hi: object, deadline_h: float) -> str:
    """The top of an error range past the deadline, never reading as the deadline itself ("reaches
    past your 30 min deadline (up to 30 min)" for 30.3 min)."""
    h = float(hi) if isinstance(hi, float | int) else None
    t = fmt_hours(h)
    # a whole deadline reads "4 h", a hair past it "4.0 h": both are the deadline's own figure
    alike = {fmt_hours(deadline_h), fmt_hours(deadline_h * (1 + 1e-6))}
    return f"just over {t}" if h is not None and t in alike else t


def _priced(o: dict[str, object], money: Money) -> str:
    """An option's cost with its kind, so two costs side by side compare like with like: "about $12
    rented", "about $2,944,000 to buy and run", "under $0.01 of electricity"; "" where unknown."""
    cost = o.get("cost_usd")
    if not isinstance(cost, float | int):
        return ""
    what = {"buy": " to buy and run", "rent": " rented", "have": " of electricity"}.get(str(o.get("kind")), "")
    return about_money(money(float(cost))) + what


def _offer_caveat(o: dict[str, object]) -> str:
    """ " (per GPU of a 2-GPU offer)" where a rental quoted beside a purchase is the per-GPU rate of
    a larger offer (a $39 RTX 5090 rental read as renting one card alone)."""
    offer, n = o.get("cloud_offer_gpus"), _int(o.get("count"), 1)
    if isinstance(offer, int) and offer > n and not o.get("cloud_unlinked"):
        return f" (per GPU of {offer_phrase(offer)})"
    return ""


def _no_price_reason(o: dict[str, object]) -> str:
    """Why an option has no cost: no price at all, or a rate only for smaller rented instances (8x
    GH200 read "the catalog has no price or hourly rate" beside a $2.29 single-GPU rate)."""
    offer = o.get("cloud_offer_gpus")
    if o.get("cloud_unlinked") and isinstance(offer, int):
        return (
            f"the catalog has no purchase price for it, and its only rental is {offer_phrase(offer)}, not "
            f"{o.get('count')} GPUs linked"
        )
    return "the catalog has no price or hourly rate for it"


def _parallel_caveats(o: dict[str, object], stage: Stage) -> list[str]:
    """What data parallelism over several GPUs changes for the user beyond the time: the global
    batch (the gradients averaged per step) and, across machines, more ways for a run to stop."""
    n, b = _int(o.get("ranks", o.get("count")), 1), o.get("batch_size")
    if n <= 1 or o.get("kind") == "cpu":
        return []
    out = []
    if isinstance(b, int) and b > 0:
        samples = f"{b} sample{'s' if b > 1 else ''} on each GPU ({n * b:,} in all)"
        how = (
            # FSDP options were described as plain data parallel, replicas and all
            f"Sharded data parallel (FSDP / ZeRO-3): each GPU holds 1/{n} of the model state and gathers each "
            f"layer's weights as it computes; a step trains {samples} and reduce-scatters the gradients; "
            if o.get("parallelism") == "fsdp"
            else f"Data parallel: a step trains {samples} and averages the {n} gradients; "
        )
        out.append(
            how + "if that global batch exceeds the one you tuned on, rescale the learning rate and warm-up: "
            "very large batches train less stably."
        )
    if stage == Stage.CLUSTER:
        out.append(
            f"Across machines, one failed GPU, node or link stops all {n}: "
            "save checkpoints often and leave time for restarts, which the estimate does not include."
        )
    return out


def stage_heading(rec: Recommendation) -> str:
    """ "Stage 3 — workstation / rented GPUs", or "No stage" where nothing considered fits (no
    stage was reached: "Stage 4 — cluster" read as if clusters had been weighed)."""
    return "No stage" if rec.action == "none" else f"Stage {rec.stage} — {STAGE_SHORT[rec.stage]}"


def verdict_line(rec: Recommendation, money: Money = usd) -> str:
    """One line: the stage and the choice, as the CLI, the GUI and the report's cover print it."""
    choice, _ = explain(rec, money)
    return f"{stage_heading(rec)}: {choice}"


def local_time(loc: LocalEstimate, pm: str = "±") -> str:
    """This machine's device's time with its band and basis, as the CLI and the report write it; a
    device with no time says why, with no band ("n/a (±100 %; ...)" gave a range of nothing). One
    that cannot hold the workload has none, as the desktop app says it: a CPU read "2.6 years (±101 %;
    ...); needs 127.7 GB, does not fit"."""
    if loc.total_time_h is None or not loc.fits:
        return f"no time: {'it does not fit' if not loc.fits else 'not estimated'} ({loc.basis})"
    return f"{fmt_hours(loc.total_time_h)} ({pm}{100 * loc.error_band:.0f} %; {loc.basis})"


def memory_need(loc: Any, *, verdict: bool = True) -> str:
    """A local device's "needs X of your Y GB" (its RAM for the CPU), and whether it fits (not where
    ``verdict`` is False: ``local_time`` said "it does not fit" before it, and a line said it twice)."""
    from gpuselect.estimate.memory import need_text, vram_text

    if loc.device == "cpu":
        from gpuselect.estimate.api import usable_ram_gb

        # judged against the usable RAM ("needs 21.9 GB, does not fit: 21.9 GB ... usable" read as a
        # contradiction): the need as a GPU's, rounded away from it, and the usable RAM rounded down
        usable = usable_ram_gb(loc.vram_gb)
        need = need_text(loc.peak_memory_gb, usable)
        room = (
            f"{vram_text(math.floor(round(usable * 100, 6)) / 100)} GB of your {loc.vram_gb:,.1f} GB of RAM is "
            "usable for training"
        )
        if loc.fits:
            return f"needs {need} GB; {room}"
        smaller = getattr(loc, "max_batch", None)
        # the batch that would fit, as a GPU's row says it (QA 15: a 65-min CPU run at batch 483 lost
        # to a $1,599 card at batch 512 without a word)
        fits_at = f" (at most batch {smaller:,} fits)" if smaller and smaller < (loc.batch_size or 0) else ""
        return f"needs {need} GB{', does not fit' if verdict else ''}: {room}{fits_at}"

    have = f"{vram_text(loc.vram_gb)} GB"  # as every face writes a card's memory: 79.65, not 79.6475
    return f"needs {need_text(loc.peak_memory_gb, loc.vram_gb)} of your {have}" + (
        "" if loc.fits or not verdict else ", does not fit"
    )
