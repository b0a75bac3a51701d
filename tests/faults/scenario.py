"""One fault case from start to verdict, and the comparisons every case shares.

A case: reset the account (bystanders stay), make the command's starting state, snapshot
it (BEFORE); arm the proxy on the window; run the CLI; the proxy signals it the moment
the window's response exists upstream. Then, by the kind of stop:

- SIGINT / SIGTERM: exit 130 / 143, the last stderr line `error: interrupted` /
  `error: terminated by SIGTERM` (for an update that completed: `… after the update of
  NAME completed …; nothing is left to clean up`), no traceback; the account holds
  BEFORE (a rollback) or,
  where the contract lets the command finish (a delete; an update once UpdateEndpoint
  reached AWS; a deploy whose peagle:completed mark reached AWS), the COMPLETED result
  (the same command run uninterrupted).
- SIGINT2 (a double Ctrl-C): exit 130, and the CLI sends no mutating request after the
  second SIGINT. If the account is not yet BEFORE or COMPLETED, the error line (stderr's
  last) names every resource left and one command, for the sandbox, to remove them;
  that command, run, leaves BEFORE or COMPLETED and touches nothing else.
- SIGKILL: `gc --yes` (or `delete NAME --yes` for a new deployment) leaves BEFORE or
  COMPLETED, and sends only deletes, of exactly the resources left. An adopt leaves no
  resource, only tags on the owner's: gc must touch nothing, and `adopt NAME --yes`
  again finishes a half-tagged endpoint.

Always: the bystanders (boto3-made, no peagle tag) are in every snapshot, so any change
to them fails the comparison, and no mutating request ever names one. Every command the
stopped CLI prints for pasting (a remedy, a fix, a backquoted `peagle …`) carries
`--sandbox`, as the stopped command did (tests/printed_commands.py).
"""

from __future__ import annotations

import re
import signal
import subprocess
from datetime import datetime, timedelta
from typing import Any

from tests.faults.cases import Command, Window
from tests.faults.proxy import Trigger, is_mutating
from tests.faults.world import BYSTANDERS, OP_TAGS, FaultWorld, Reference, Signaller
from tests.printed_commands import off_target

__all__ = ["check_operation_tags", "check_windows", "run_case"]

Snapshot = dict[str, dict[str, Any]]

SIGNALS = {
    "SIGINT": signal.SIGINT,
    "SIGINT2": signal.SIGINT,
    "SIGTERM": signal.SIGTERM,
    "SIGKILL-gc": signal.SIGKILL,
    "SIGKILL-delete": signal.SIGKILL,
}
UPDATES = ("update", "apply-update", "update-component")
LAST_LINE = {signal.SIGINT: "error: interrupted", signal.SIGTERM: "error: terminated by SIGTERM"}
# The one command a stopped rollback may advise (issue 23): it removes exactly what is left,
# in the sandbox the command ran against (issue 33: pasted without --sandbox it reaches AWS).
REMEDY = re.compile(r"peagle --sandbox (gc --operation \S+|delete \S+|adopt \S+|update \S+) --yes")


def reference(world: FaultWorld, command: Command) -> Reference:
    return world.reference(command.key, command.start, command.args)


def labels(log: list[Any]) -> list[str]:
    """The mutating operations the CLI sent, in order, named as windows are."""
    ops = [e.operation for e in log if is_mutating(e.operation)]
    seen: dict[str, int] = {}
    out = []
    for op in ops:
        seen[op] = seen.get(op, 0) + 1
        out.append(f"{op}#{seen[op]}" if ops.count(op) > 1 else op)
    return out


def check_windows(world: FaultWorld, command: Command) -> None:
    """The windows are every mutating request an uninterrupted run sends, in order, and
    the wait window exists (a DescribeEndpoint answered while the endpoint changed)."""
    log = reference(world, command).log
    sent = [(e.operation, _name(e.params)) for e in log if is_mutating(e.operation)]
    want = [w.label for w in command.windows if not w.waiting]
    assert labels(log) == want, f"windows {want}, but an uninterrupted run sent {sent}"
    if any(w.waiting for w in command.windows):
        assert any(
            e.operation == "DescribeEndpoint" and e.endpoint_status in ("Creating", "Updating")
            for e in log
        )


OPERATION_ID = re.compile(r"op-\d{8}T\d{6}Z-[0-9a-f]{6}")


def check_operation_tags(world: FaultWorld, command: Command) -> None:
    """Every resource the uninterrupted run created carries its operation: one id
    (op-<UTC time>-<hex>), the owner host:pid, a UTC ISO-8601 deadline."""
    ref = reference(world, command)
    created = sorted(ref.raw.keys() - ref.before.keys())
    assert created, "the command created nothing"
    ids = set()
    for key in created:
        tags = ref.raw[key]["tags"]
        missing = [t for t in OP_TAGS if t not in tags]
        assert missing == [], f"{key} lacks {missing}: {tags}"
        op, owner, until = (tags[t] for t in OP_TAGS)
        assert OPERATION_ID.fullmatch(op), f"{key}: peagle:operation={op!r}"
        host, _, pid = owner.rpartition(":")
        assert host and pid.isdigit(), f"{key}: peagle:operation-owner={owner!r}"
        deadline = datetime.fromisoformat(until.replace("Z", "+00:00"))
        assert deadline.utcoffset() == timedelta(0), f"{key}: peagle:operation-until={until!r}"
        ids.add(op)
    assert len(ids) == 1, f"one operation made them all: {ids}"


def diff(now: Snapshot, want: Snapshot) -> list[str]:
    """What `now` holds that `want` does not (+), lacks (-) or holds otherwise (~)."""
    out = [f"+ {k} {now[k]}" for k in sorted(now.keys() - want.keys())]
    out += [f"- {k}" for k in sorted(want.keys() - now.keys())]
    for k in sorted(now.keys() & want.keys()):
        if now[k] != want[k]:
            changed = {
                f: (want[k].get(f), now[k].get(f)) for f in now[k] if now[k][f] != want[k].get(f)
            }
            out.append(f"~ {k} {changed}")
    return out


def assert_one_of(now: Snapshot, allowed: dict[str, Snapshot], context: str) -> str:
    """`now` is exactly one of the allowed states; returns its name."""
    for name, want in allowed.items():
        if now == want:
            return name
    report = "\n".join(f"against {n}:\n  " + "\n  ".join(diff(now, w)) for n, w in allowed.items())
    raise AssertionError(f"{context}: the account holds neither {' nor '.join(allowed)}\n{report}")


def _name(params: dict[str, Any]) -> str:
    for key in ("EndpointName", "EndpointConfigName", "ModelName", "InferenceComponentName"):
        if key in params:
            return str(params[key])
    arn = str(params.get("ResourceArn") or params.get("ResourceId") or "")
    return arn.rsplit("/", 1)[-1]


def mutations(requests: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(operation, resource name) of each mutating request in the sandbox's log."""
    return [(r["operation"], _name(r["params"])) for r in requests if is_mutating(r["operation"])]


def assert_bystanders_untouched(requests: list[dict[str, Any]]) -> None:
    touched = [m for m in mutations(requests) if m[1] in BYSTANDERS]
    assert touched == [], f"a mutating request named a bystander: {touched}"


def _names(keys: set[str]) -> set[str]:
    return {k.split("/", 1)[1] for k in keys}


def _run(world: FaultWorld, command: Command, window: Window, stop: str) -> tuple[
    subprocess.Popen[str], str, Trigger, Signaller
]:  # fmt: skip
    sig = SIGNALS[stop]
    signaller = Signaller(sig)
    matches = None
    if window.waiting:
        matches = lambda _params, state: state in ("Creating", "Updating")  # noqa: E731
    trigger = Trigger(
        window.operation, signaller.first, nth=window.nth, matches=matches,
        then=signaller.second if stop == "SIGINT2" else None,
    )  # fmt: skip
    assert world.proxy is not None
    world.proxy.arm(trigger)
    proc = world.spawn(command.args)
    signaller.attach(proc)
    try:
        _, err = proc.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        hung = f"peagle {' '.join(command.args)} hung after {stop}:\n{err[-3000:]}"
        raise AssertionError(hung) from None
    finally:
        world.proxy.disarm()
    assert trigger.errors == [], trigger.errors
    assert trigger.fired_at is not None, (
        f"the window {window.label} never came (exit {proc.returncode}): {err[-2000:]}"
    )
    return proc, err, trigger, signaller


def run_case(world: FaultWorld, command: Command, window: Window, stop: str) -> None:
    ref = reference(world, command)
    before_ref, completed = ref.before, ref.completed
    world.reset()
    world.prepare(command.start)
    before = world.snapshot()
    # The same starting state as the reference run's, so its result is this one's.
    assert before == before_ref, diff(before, before_ref)
    world.clear_requests()
    proc, err, trigger, _ = _run(world, command, window, stop)
    assert_bystanders_untouched(world.requests())
    where = f"{command.key} stopped by {stop} at {window.label}"
    off = off_target(err, sandbox=True)
    assert off == [], f"{where}: printed without --sandbox: {off}\n{err[-2000:]}"
    world.settle()
    after = world.snapshot()
    states = {"before": before, "completed": completed}
    if stop.startswith("SIGKILL"):
        _after_kill(world, command, proc, after, states, stop, where)
    elif stop == "SIGINT2":
        _after_double(world, command, window, proc, err, trigger, after, states, where)
    else:
        sig = SIGNALS[stop]
        assert "Traceback" not in err, err[-3000:]
        assert proc.returncode == 128 + sig, f"{where}: exit {proc.returncode}\n{err[-2000:]}"
        last = err.strip().splitlines()[-1] if err.strip() else ""
        state = assert_one_of(after, _expected(command, window, states), where)
        if state == "completed" and command.key in UPDATES:
            # The update took effect and its clean-up ran: the line says it completed.
            said = rf"{LAST_LINE[sig]} after the (component )?update of {re.escape(command.name)} "
            said += r"completed( \(it serves \S+\))?; nothing is left to clean up"
            assert re.fullmatch(said, last), f"{where}: last line {last!r}\n{err[-2000:]}"
        else:
            assert last == LAST_LINE[sig], f"{where}: last line {last!r}\n{err[-2000:]}"
    assert_bystanders_untouched(world.requests())  # and what ran after it (gc, a remedy)


def _expected(command: Command, window: Window, states: dict[str, Snapshot]) -> dict[str, Snapshot]:
    """Where a first signal must leave the account (issue 23's contract)."""
    if command.key == "delete":  # a first signal lets the delete finish
        return {"completed": states["completed"]}
    if window.may_finish:  # UpdateEndpoint reached AWS, or the deployment is marked complete
        return states
    return {"before": states["before"]}  # deploy, apply, update before it, adopt: roll back


def _after_double(
    world: FaultWorld, command: Command, window: Window, proc: subprocess.Popen[str],
    err: str, trigger: Trigger, after: Snapshot, states: dict[str, Snapshot], where: str,
) -> None:  # fmt: skip
    assert "Traceback" not in err, err[-3000:]
    assert proc.returncode == 130, f"{where}: exit {proc.returncode}\n{err[-2000:]}"
    assert world.proxy is not None
    if trigger.then_at is not None:  # the second SIGINT stops the rollback there
        late = [
            (e.operation, _name(e.params)) for e in world.proxy.log()
            if e.seq > trigger.then_at and is_mutating(e.operation)
        ]  # fmt: skip
        assert late == [], f"{where}: sent after the second SIGINT: {late}"
    remedies = sorted(set(REMEDY.findall(err)))
    assert len(remedies) <= 1, f"{where}: more than one command advised: {remedies}"
    if all(after != s for s in states.values()):
        assert remedies, f"{where}: resources are left and no command removes them\n{err[-2000:]}"
        # The error line itself (the last; all that --quiet leaves) says what is left and
        # the command, and that command targets the sandbox the CLI ran against (issue 33).
        last = err.strip().splitlines()[-1]
        assert last.startswith("error: interrupted; "), f"{where}: last line {last!r}"
        found = REMEDY.search(last)
        assert found and found.group(0).startswith("peagle --sandbox "), f"{where}: {last!r}"
        # Every resource left, by name: what is there that the end state lacks by name.
        target = states["completed"] if command.key == "delete" else states["before"]
        left = _names(after.keys() - target.keys())
        if window.may_finish:
            left = _names(after.keys() - states["before"].keys() - states["completed"].keys())
        unnamed = sorted(n for n in left if n not in last)
        assert unnamed == [], f"{where}: the error line does not name {unnamed}\n{err[-2000:]}"
    if not remedies:
        return  # the rollback had finished: nothing to advise
    # Advised, it is run (also when the rollback had in fact finished, unheard: the
    # command must then change nothing that matters).
    world.clear_requests()
    world.cli(*remedies[0].split(), "--yes")
    world.settle()
    final = world.snapshot()
    assert_one_of(final, states, f"{where}, then `peagle {remedies[0]} --yes`")
    _assert_touched_only_changed(world, after, final, where)


def _assert_touched_only_changed(
    world: FaultWorld, after: Snapshot, final: Snapshot, where: str
) -> None:
    changed = {k for k in after.keys() | final.keys() if after.get(k) != final.get(k)}
    touched = {name for _, name in mutations(world.requests())}
    assert touched <= _names(changed), f"{where}: touched {sorted(touched - _names(changed))}"


def _after_kill(
    world: FaultWorld, command: Command, proc: subprocess.Popen[str], after: Snapshot,
    states: dict[str, Snapshot], stop: str, where: str,
) -> None:  # fmt: skip
    assert proc.returncode == -signal.SIGKILL, proc.returncode
    world.clear_requests()
    if stop == "SIGKILL-delete":
        world.cli("delete", command.name, "--yes")
        cleanup = f"delete {command.name} --yes"
    else:
        world.cli("gc", "--yes")
        cleanup = "gc --yes"
    world.settle()
    if command.key == "adopt":
        # An adopt's leftovers are tags on the owner's resources, which gc never deletes
        # (peagle:origin=adopted); what finishes a half-tagged endpoint is the adopt itself.
        assert mutations(world.requests()) == [], f"{where}: gc touched an adopted resource"
        now = world.snapshot()
        if all(now != s for s in states.values()):
            again = world.cli(*command.args, check=False)
            left = "\n".join(diff(now, states["completed"]))
            assert again.returncode == 0, f"{where}: adopt again failed: {again.stderr}{left}"
            world.settle()
            assert_one_of(world.snapshot(), {"completed": states["completed"]}, f"{where}, adopt")
        return
    final = world.snapshot()
    assert_one_of(final, states, f"{where}, then `peagle {cleanup}`")
    sent = mutations(world.requests())
    # gc deletes; the one other thing it may send is finishing an update that took effect
    # (the endpoint takes the tags of the config it serves: one AddTags on the endpoint).
    finishing = [(op, n) for op, n in sent if op == "AddTags" and n == command.name]
    assert len(finishing) <= 1 and command.key in UPDATES or not finishing, sent
    sent = [s for s in sent if s not in finishing]
    assert all(op.startswith(("Delete", "Deregister")) for op, _ in sent), f"{where}: {sent}"
    leftovers = _names(after.keys() - final.keys())
    assert {name for _, name in sent} == leftovers, (
        f"{where}: deleted {sent}, leftovers {leftovers}"
    )
