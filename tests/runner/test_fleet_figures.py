"""A fleet's figures from capacities measured at several copy counts (runner/figures/fleet.py):
efficiency against one copy, and the copies a load needs from what was measured near it, never
one copy times N."""

from __future__ import annotations

from runner.figures.fleet import FleetPoint, copies_for, scaling

# One copy carries 10; two carry 18; four carry 30 (each copy less than the one before).
MEASURED = [FleetPoint(4, 30.0), FleetPoint(1, 10.0), FleetPoint(2, 18.0)]


def test_efficiency_is_capacity_over_copies_times_one_copys():
    rows = scaling(MEASURED)
    assert [(r.copies, r.capacity, r.efficiency, r.ideal) for r in rows] == [
        (1, 10.0, 1.0, 10.0),
        (2, 18.0, 0.9, 20.0),
        (4, 30.0, 0.75, 40.0),
    ]


def test_without_one_copys_capacity_there_is_no_efficiency():
    rows = scaling([FleetPoint(2, 18.0), FleetPoint(1, None)])
    assert [r.efficiency for r in rows] == [None, None]


def test_a_load_a_measured_count_carries_takes_that_count():
    needed = copies_for(18.0, MEASURED)
    assert needed.copies == 2 and "measured to carry 18" in needed.how
    assert copies_for(9.0, MEASURED).copies == 1


def test_between_two_measured_counts_the_capacity_is_read_on_the_line_between_them():
    # 3 copies: 18 + (30 - 18) / 2 = 24 >= 22; one copy times three (30) would have said the same
    # count, but a load of 25 needs 4: 3 copies carry 24 on the line.
    assert copies_for(22.0, MEASURED).copies == 3
    needed = copies_for(25.0, MEASURED)
    assert needed.copies == 4


def test_past_the_largest_count_its_capacity_per_copy_is_carried_on_and_said():
    # Four copies carry 7.5 each: 35 needs 5 (one copy's 10 times N would say 4).
    needed = copies_for(35.0, MEASURED)
    assert needed.copies == 5 and "EXTRAPOLATED" in needed.how


def test_one_count_measured_gives_no_count():
    needed = copies_for(15.0, [FleetPoint(1, 10.0)])
    assert needed.copies is None and "scaling not measured" in needed.how
