"""`verify`: apply a rollback plan to a scratch copy and prove each affected table is restored.

The plan runs as the execution would run it (every check, every statement touching exactly one row),
in one transaction; the affected tables are then checksummed inside that transaction and compared
with their expected state (a checksum file taken before the change, or another server). The
transaction is rolled back unless `keep` (then it is committed and the tables are read afterwards).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any
from xml.etree import ElementTree

from rollback.base.errors import EXIT_DIFFERS, EXIT_OK, RollbackError
from rollback.target.checksum import TableChecksum, Verdict, compare, take_tables
from rollback.target.execute import ExecutionResult, execute_plan, read_plan


@dataclass
class VerifyResult:
    plan: str
    target: str
    kept: bool
    verdicts: list[Verdict] = field(default_factory=list)
    execution: ExecutionResult | None = None
    error: str = ""
    exit_code: int = EXIT_OK

    @property
    def outcome(self) -> str:
        if self.error:
            return "error"
        return "restored" if all(v.ok for v in self.verdicts) else "differs"

    def to_dict(self) -> dict[str, Any]:
        return {
            "command": "verify",
            "result": self.outcome,
            "exit_code": self.exit_code,
            "plan": self.plan,
            "target": self.target,
            "kept": self.kept,
            "error": self.error or None,
            "execution": self.execution.to_dict() if self.execution else None,
            "tables": [v.to_dict() for v in self.verdicts],
        }


def plan_tables(plan_path: str) -> list[str]:
    tables = sorted({str(step["table"]) for step in read_plan(plan_path) if step.get("table")})
    if not tables:
        raise RollbackError(f"{plan_path}: the plan holds no statement, so there is nothing to verify")
    return tables


def verify_plan(
    plan_path: str,
    connect: Callable[[], Any],
    expected: dict[str, TableChecksum],
    tables: Iterable[str],
    result: VerifyResult,
    **execution: Any,
) -> VerifyResult:
    """Apply the plan on the target (connect gives a fresh connection) and compare `tables` with
    `expected`. Fills `result`; an execution that fails raises (the result keeps what is known)."""
    names = sorted(set(tables))
    found: dict[str, TableChecksum] = {}

    def read(conn: Any) -> None:
        found.update(take_tables(conn, [name for name in names if name in expected]))

    if result.kept:
        result.execution = execute_plan(plan_path, connect, commit=True, **execution)
        conn = connect()
        try:
            read(conn)
        finally:
            conn.close()
    else:
        result.execution = execute_plan(plan_path, connect, commit=False, inspect=read, **execution)
    unwritten = {t.lower() for t in result.execution.read_only_tables}
    for name in names:
        if name not in expected:
            result.verdicts.append(Verdict(name, "not in expected", reason="no expected checksum for it"))
        elif name.lower() in unwritten:
            result.verdicts.append(
                Verdict(
                    name, "not verified", reason="non-transactional: a dry run does not write it (--keep)"
                )
            )
        else:
            result.verdicts.append(compare(expected[name], found[name]))
    result.exit_code = EXIT_OK if all(v.ok for v in result.verdicts) else EXIT_DIFFERS
    return result


def junit_xml(result: VerifyResult) -> bytes:
    """One test case per table (and one for the execution when it failed), for CI systems."""
    suite = ElementTree.Element("testsuite", name="mysql-rollback verify")
    cases: list[tuple[str, str | None]] = []
    if result.error:
        cases.append(("apply the rollback", result.error))
    cases += [(v.table, None if v.ok else v.line()) for v in result.verdicts]
    suite.set("tests", str(len(cases)))
    suite.set("failures", str(sum(1 for _, failure in cases if failure)))
    for name, failure in cases:
        case = ElementTree.SubElement(suite, "testcase", classname="verify", name=name)
        if failure:
            ElementTree.SubElement(case, "failure", message=failure).text = failure
    return ElementTree.tostring(suite, encoding="utf-8", xml_declaration=True)
