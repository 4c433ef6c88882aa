"""Multi-process programs, pure parts: replica groups, the host/local split of collective bytes on
constructed topologies (named so: no multi-host machine here), and run matching across processes."""

from __future__ import annotations

import pytest

from pytest_roofline.analysis.runs.across_processes import Decider, MatchError, ProcessTimes, match_runs
from pytest_roofline.analysis.runs.hosts import (
    CollectiveSplit,
    GroupsError,
    Topology,
    collective_time,
    expand_groups,
    permute_pairs,
    split_collective,
)

TWO_BY_TWO = Topology((0, 0, 1, 1))  # constructed: 2 processes (hosts) x 2 devices
FOUR_BY_FOUR = Topology(tuple(p for p in range(4) for _ in range(4)))  # constructed: 4 hosts x 4 chips


def test_replica_groups_in_every_form() -> None:
    assert expand_groups("{}", 4) == [(0, 1, 2, 3)]
    assert expand_groups("{{0,1},{2,3}}", 4) == [(0, 1), (2, 3)]
    assert expand_groups("[1,4]<=[4]", 4) == [(0, 1, 2, 3)]
    assert expand_groups("[2,2]<=[4]", 4) == [(0, 1), (2, 3)]
    # transposed: groups take every other device, as XLA writes an axis that is not the last
    assert expand_groups("[2,2]<=[2,2]T(1,0)", 4) == [(0, 2), (1, 3)]
    assert expand_groups("[4,2]<=[2,4]T(1,0)", 8) == [(0, 4), (1, 5), (2, 6), (3, 7)]
    with pytest.raises(GroupsError):
        expand_groups("[3,2]<=[4]", 4)
    with pytest.raises(GroupsError):
        expand_groups("garbage", 4)


def test_a_group_within_each_host_stays_local() -> None:
    split = split_collective(100.0, expand_groups("{{0,1},{2,3}}", 4), TWO_BY_TWO)
    assert split == CollectiveSplit(local_bytes=100.0, host_bytes=0.0) and not split.crosses_hosts


def test_a_group_across_hosts_crosses_once_per_host_boundary() -> None:
    # ring 0-1-2-3-0 on 2x2: hops 0->1 and 2->3 local, 1->2 and 3->0 cross; each host sends 100 B out
    split = split_collective(100.0, expand_groups("{}", 4), TWO_BY_TWO)
    assert split == CollectiveSplit(local_bytes=100.0, host_bytes=100.0)
    # groups {0,2} and {1,3} (the transposed iota): both rings cross; host 0 sends two groups' bytes
    split = split_collective(100.0, expand_groups("[2,2]<=[2,2]T(1,0)", 4), TWO_BY_TWO)
    assert split == CollectiveSplit(local_bytes=0.0, host_bytes=200.0)


def test_sixteen_chips_on_four_hosts() -> None:
    # all 16 in one ring: 4 crossing hops, one per host; 12 local hops
    split = split_collective(10.0, expand_groups("{}", 16), FOUR_BY_FOUR)
    assert split == CollectiveSplit(local_bytes=10.0, host_bytes=10.0)
    # groups of 4 along the other axis (one chip per host): every hop crosses, each host sends 4 groups' bytes
    split = split_collective(10.0, expand_groups("[4,4]<=[4,4]T(1,0)", 16), FOUR_BY_FOUR)
    assert split == CollectiveSplit(local_bytes=0.0, host_bytes=40.0)


def test_collective_permute_follows_its_pairs() -> None:
    pairs = permute_pairs("{{0,1},{1,2},{2,3},{3,0}}")
    assert pairs == [(0, 1), (1, 2), (2, 3), (3, 0)]
    assert split_collective(8.0, [], TWO_BY_TWO, pairs) == CollectiveSplit(8.0, 8.0)
    with pytest.raises(GroupsError, match="outside"):
        split_collective(8.0, [(0, 9)], TWO_BY_TWO)


def test_the_slower_link_decides_and_an_unknown_one_makes_a_lower_bound() -> None:
    split = CollectiveSplit(local_bytes=1e9, host_bytes=1e8)
    cases = [((1e11, 1e10), 0.01, False),  # both links 10 ms
             ((1e11, 1e9), 0.1, False),  # the host link, 100 ms
             ((1e11, None), 0.01, True), ((None, None), 0.0, True)]
    for (local_bw, host_bw), seconds, lower in cases:
        took, bound = collective_time(split, local_bw, host_bw)
        assert took == pytest.approx(seconds) and bound is lower
    took, bound = collective_time(CollectiveSplit(1e9, 0.0), 1e11, None)  # no host traffic: nothing unknown
    assert took == pytest.approx(0.01) and bound is False


def test_topology_describes_itself() -> None:
    assert TWO_BY_TWO.describe() == "2 processes x 2 devices (4 devices)"
    assert TWO_BY_TWO.devices_of(1) == (2, 3)


# --- run matching ---------------------------------------------------------------------------------------------
def test_each_run_takes_its_slowest_device_across_processes() -> None:
    p0 = ProcessTimes(0, {"cpu:0": (1.0, 1.0, 5.0), "cpu:1": (1.1, 1.0, 1.0)})
    p1 = ProcessTimes(1, {"cpu:2048": (2.0, 0.9, 1.0), "cpu:2049": (2.1, 0.9, 1.0)})
    matched = match_runs([p0, p1])
    assert matched.per_run_s == (2.1, 1.0, 5.0)
    assert matched.deciders == (Decider(1, "cpu:2049"), Decider(0, "cpu:0"), Decider(0, "cpu:0"))
    assert matched.decided_by == Decider(0, "cpu:0") and matched.decided_share == pytest.approx(2 / 3)
    assert matched.per_process_median_s == {0: 1.1, 1: 1.0}
    assert "process 0, device cpu:0 in 67% of 3 runs" in matched.describe()


def test_runs_that_do_not_match_are_an_error_naming_the_process() -> None:
    p0 = ProcessTimes(0, {"gpu:0": (1.0, 1.0, 1.0)})
    p1 = ProcessTimes(1, {"gpu:1": (1.0, 1.0)})
    with pytest.raises(MatchError, match="process 1 device gpu:1: 2"):
        match_runs([p0, p1])
    with pytest.raises(MatchError, match="process 1 reported no device times"):
        match_runs([p0, ProcessTimes(1, {})])


def test_process_times_round_trip() -> None:
    p = ProcessTimes(1, {"cpu:2048": (0.5, 0.25)})
    assert ProcessTimes.from_dict(p.to_dict()) == p


# --- the model of a program on several hosts --------------------------------------------------------------------
# Constructed, in the spelling of an SPMD-partitioned XLA program: each of 4 devices all-reduces 1 MiB (f32[256,1024])
# over all four, then over the pairs {0,2} and {1,3}.
CONSTRUCTED_ALL_REDUCES = """HloModule jit_two_reductions, is_scheduled=true

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %s = f32[] add(f32[] %a, f32[] %b)
}

ENTRY %main (x: f32[256,1024]) -> f32[256,1024] {
  %x = f32[256,1024]{1,0} parameter(0)
  %all = f32[256,1024]{1,0} all-reduce(f32[256,1024]{1,0} %x), channel_id=1, replica_groups=[1,4]<=[4], use_global_device_ids=true, to_apply=%add
  ROOT %pairs = f32[256,1024]{1,0} all-reduce(f32[256,1024]{1,0} %all), channel_id=2, replica_groups=[2,2]<=[2,2]T(1,0), use_global_device_ids=true, to_apply=%add
}
"""  # noqa: E501 (HLO text as XLA prints it)


def test_the_model_splits_collectives_between_ici_and_dcn() -> None:
    from pytest_roofline.analysis.model.program_model import program_model
    from pytest_roofline.analysis.program.counts import hlo_counts
    from pytest_roofline.analysis.program.hlo_reader import parse_hlo
    from pytest_roofline.hardware.table import find_spec, load_shipped_table

    module = parse_hlo(CONSTRUCTED_ALL_REDUCES)
    spec = find_spec(load_shipped_table(), "tpu", "TPU v5e")  # constructed: 2 hosts x 2 chips of a v5e slice
    model = program_model(spec, hlo_counts(module), module, 4, topology=TWO_BY_TWO)
    mib = 256 * 1024 * 4
    ring4, ring2 = 2 * 3 / 4 * mib, 2 * 1 / 2 * mib  # ring bytes per device: all four, then pairs
    hosts = model.hosts
    assert hosts is not None and hosts.crossing == ("all", "pairs")
    # all four: each device sends ring4 over one hop, each host one crossing; the pairs {0,2} and {1,3}: every hop
    # crosses, so each host sends two groups' bytes
    assert hosts.local_bytes == pytest.approx(ring4) and hosts.host_bytes == pytest.approx(ring4 + 2 * ring2)
    ici, dcn = 45e9, 25e9
    expected = max(ring4 / ici, ring4 / dcn) + 2 * ring2 / dcn
    assert hosts.time_s == pytest.approx(expected) and not hosts.lower_bound
    assert model.estimate.comms_time_s == pytest.approx(expected)
    uses = {u.work: u.key for u in model.uses}
    assert (
        uses["collective bytes within a host"] == "interconnect"
        and uses["collective bytes across hosts"] == "host link"
    )
    # one process: the old single-interconnect model
    one = program_model(spec, hlo_counts(module), module, 4)
    assert one.hosts is None and one.estimate.comms_time_s == pytest.approx((ring4 + ring2) / ici)


def test_a_cpu_has_no_host_link_figure_so_the_term_is_a_lower_bound() -> None:
    from pytest_roofline.analysis.model.program_model import program_model
    from pytest_roofline.analysis.program.counts import hlo_counts
    from pytest_roofline.analysis.program.hlo_reader import parse_hlo
    from pytest_roofline.hardware.spec import Ceiling, HardwareSpec

    module = parse_hlo(CONSTRUCTED_ALL_REDUCES)
    cpu = HardwareSpec("constructed CPU", "cpu", {"f32": Ceiling(1e11, "calibration", "test", "")},
                       Ceiling(1e10, "calibration", "test", ""))
    model = program_model(cpu, hlo_counts(module), module, 4, topology=TWO_BY_TWO)
    assert model.hosts is not None and model.hosts.lower_bound and model.hosts.time_s == 0.0
    assert model.hosts.host_bytes > 0
