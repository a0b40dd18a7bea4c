"""Verdicts as JUnit XML (`--junit FILE` on fault, scenario, soak and experiment run), the test
report format CI systems read: a test suite per run, a test case per checker and trial (FAIL is a
failure, UNKNOWN an error, a documented limitation seen passes and says so); a run without
checkers (an experiment) has a test case per trial, failed when the trial failed."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Sequence

from clusterbench.store import Store


def junit_xml(store: Store, run_ids: Sequence[int]) -> str:
    root = ET.Element("testsuites", name="clusterbench")
    totals = {"tests": 0, "failures": 0, "errors": 0}
    for run_id in run_ids:
        suite = _suite(store, run_id)
        root.append(suite)
        for k in totals:
            totals[k] += int(suite.get(k, "0"))
    for k, v in totals.items():
        root.set(k, str(v))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _suite(store: Store, run_id: int) -> ET.Element:
    run = store.get_run(run_id)
    seqs = {t.id: t for t in store.trials(run_id)}
    suite = ET.Element("testsuite", name=f"run {run_id}: {run.kind} {run.name}".strip(),
                       timestamp=run.started_at)  # fmt: skip
    failures = errors = 0
    verdicts = store.verdicts(run_id)
    for v in verdicts:
        tr = seqs.get(v["trial_id"])
        where = f"trial {tr.seq} ({tr.workload})" if tr is not None else "run"
        case = ET.SubElement(suite, "testcase", classname=f"{run.kind}.{run.name}.{where}", name=v["checker"])
        evidence = json.dumps(v["evidence"], sort_keys=True, default=str)
        if v["result"] == "FAIL" and not v["documented_limitation"]:
            ET.SubElement(case, "failure", message=v["summary"], type="FAIL").text = evidence
            failures += 1
        elif v["result"] == "UNKNOWN":
            ET.SubElement(case, "error", message=v["summary"], type="UNKNOWN").text = evidence
            errors += 1
        else:
            note = "documented limitation seen: " if v["result"] == "FAIL" else ""
            ET.SubElement(case, "system-out").text = note + v["summary"]
    if not verdicts:
        for tr in seqs.values():
            case = ET.SubElement(suite, "testcase", classname=f"{run.kind}.{run.name}",
                                 name=f"trial {tr.seq} ({tr.workload})")  # fmt: skip
            if tr.status != "completed":
                ET.SubElement(case, "failure", message=f"trial {tr.status}", type=tr.status)
                failures += 1
    suite.set("tests", str(len(suite.findall("testcase"))))
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    return suite
