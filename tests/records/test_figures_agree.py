"""A measurement's figures are declared in three places: the live result (result/figures.py's ``Measured``), its
JSON form (``Result.to_dict``) and the record read back from a report (records/recorded_result.py's
``RecordedResult``). These tests fail where a figure is added to one and not the others, or a declared exception
goes stale. Made-up results (tests/support/fakes.py)."""

from __future__ import annotations

import dataclasses
import json

from fakes import fake_result

from pytest_roofline.records.recorded_result import FROM_OTHER_KEYS, JSON_ONLY, RecordedResult
from pytest_roofline.result.figures import Measured
from pytest_roofline.result.result import FLATTENED, NOT_WRITTEN, RENAMED

RESULT = fake_result(0.5)
KEYS = set(RESULT.to_dict())
RECORDED = {f.name for f in dataclasses.fields(RecordedResult)} - {"json", "source"}


def test_every_key_of_the_json_is_a_field_of_the_record_or_declared_json_only() -> None:
    assert KEYS - RECORDED - JSON_ONLY == set(), "a figure in Result.to_dict that RecordedResult does not read"
    assert JSON_ONLY <= KEYS, "JSON_ONLY names a key the JSON no longer has"
    assert not JSON_ONLY & RECORDED, "a key both read by the record and declared JSON-only"


def test_every_field_of_the_record_is_in_the_json() -> None:
    missing = {name for name in RECORDED - KEYS if FROM_OTHER_KEYS.get(name) not in KEYS}
    assert missing == set(), "a RecordedResult field that no key of Result.to_dict holds"


def test_every_figure_of_the_live_result_reaches_the_json() -> None:
    for part in FLATTENED:
        assert set(getattr(RESULT, part).to_dict()) <= KEYS, part
    assert set(RENAMED.values()) <= KEYS
    measured = {f.name for f in dataclasses.fields(Measured)}
    assert measured - KEYS - set(FLATTENED) - set(RENAMED) - NOT_WRITTEN == set(), \
        "a Measured field that Result.to_dict does not write (nor declares unwritten)"
    assert NOT_WRITTEN <= measured and not NOT_WRITTEN & KEYS


def test_the_record_of_a_result_is_what_its_json_reads_back() -> None:
    kept = RecordedResult.of(RESULT)
    again = RecordedResult.from_dict(json.loads(json.dumps(kept.to_dict())))
    assert dataclasses.replace(kept, hardware=again.hardware) == again
