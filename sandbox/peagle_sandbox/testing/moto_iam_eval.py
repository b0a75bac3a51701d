"""The role checks a scheduled call passes in the sandbox: may EventBridge Scheduler assume
the schedule's role, and may the role call the target's action on its resource.

moto 5.2.5 has policy matching (`moto.iam.access_control`) but not for this: it reads only
`Principal.AWS` in a trust policy and evaluates no `aws:ResourceTag` condition. So here, a
small evaluator of IAM's documented logic ("Policy evaluation logic", "IAM JSON policy
elements: Condition operators"):
- A statement applies when its Action (or NotAction) matches, case-insensitively with `*`
  and `?`, and its Resource (or NotResource) matches, case-sensitively, and every condition
  holds (operators AND, keys AND, a key's values OR).
- An explicit Deny that applies wins; else an Allow that applies allows; else implicitly
  denied.
- Condition operators: String(Not)Equals, StringEqualsIgnoreCase, String(Not)Like,
  Arn(Not)Equals, Arn(Not)Like, Bool, Null, each with `...IfExists`. A missing key makes a
  positive operator false and a negated one true (IAM's rule); `IfExists` makes it true.
  [INF] `ForAnyValue:` / `ForAllValues:` and the numeric and date operators are not
  evaluated: a statement carrying one does not apply (an Allow does not allow, a Deny does
  not deny); peagle's policies use none.
- The trust policy: a statement allows when its Principal is `*`, `{"AWS": "*"}` or names
  `{"Service": "scheduler.amazonaws.com"}`, its Action matches `sts:AssumeRole`, and its
  conditions hold for Scheduler's context: `aws:SourceAccount` = the schedule's account
  and `aws:SourceArn` = the schedule GROUP's ARN (AWS's "Preventing cross-service
  confused deputy" page for Scheduler: "The value of aws:SourceArn must be your
  EventBridge Scheduler schedule group ARN").
- The role's policies: its inline policies and the default version of each attached
  managed policy. Permissions boundaries, SCPs and session policies are not modelled.

The failure texts follow AWS's authorization message ("User: <principal> is not authorized
to perform: <action> on resource: <arn> because no identity-based policy allows the
<action> action"; "... with an explicit deny in an identity-based policy"). [INF] The
assumed-role session name Scheduler uses is not documented; the harness uses the
schedule's name. [INF] The trust failure's wording ("The execution role you provide must
allow AWS EventBridge Scheduler to assume the role.") is the one users report from
CreateSchedule; when the role is missing the harness says so plainly.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

__all__ = ["SCHEDULER", "evaluate", "policies_of", "trust_allows"]

SCHEDULER = "scheduler.amazonaws.com"
_SUPPORTED = {
    "stringequals",
    "stringnotequals",
    "stringequalsignorecase",
    "stringlike",
    "stringnotlike",
    "arnequals",
    "arnnotequals",
    "arnlike",
    "arnnotlike",
    "bool",
    "null",
}


def _listify(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


@lru_cache(maxsize=512)
def _wildcard(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    body = "".join(".*" if ch == "*" else "." if ch == "?" else re.escape(ch) for ch in pattern)
    return re.compile(f"^{body}$", re.IGNORECASE | re.DOTALL if ignore_case else re.DOTALL)


def _like(pattern: str, value: str, ignore_case: bool = False) -> bool:
    return bool(_wildcard(pattern, ignore_case).match(value))


def _document(raw: Any) -> dict[str, Any]:
    """A policy document: a dict, or JSON text (IAM stores it URL-encoded at times)."""
    if isinstance(raw, dict):
        return raw
    text = str(raw or "")
    if text.startswith("%7B") or text.startswith("%7b"):
        text = unquote(text)
    try:
        doc = json.loads(text)
    except ValueError:
        return {}
    return doc if isinstance(doc, dict) else {}


def _statements(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in _listify(doc.get("Statement")) if isinstance(s, dict)]


def _condition_holds(operator: str, key_values: dict[str, Any], context: dict[str, str]) -> bool:
    """One operator block: every key holds (AND); a key holds when any value matches."""
    op = operator.lower()
    if_exists = op.endswith("ifexists")
    if if_exists:
        op = op[: -len("ifexists")]
    if ":" in op or op not in _SUPPORTED:
        raise _Unsupported(operator)
    lowered = {k.lower(): v for k, v in context.items()}
    for key, expected in key_values.items():
        wanted = [str(v) for v in _listify(expected)]
        actual = lowered.get(key.lower())
        if op == "null":
            # Null: true means "the key is absent".
            if not any((actual is None) == (w.lower() == "true") for w in wanted):
                return False
            continue
        negated = "not" in op
        if actual is None:
            if if_exists or negated:
                continue
            return False
        if op in ("stringequals", "arnequals", "stringnotequals", "arnnotequals"):
            hit = actual in wanted
        elif op == "stringequalsignorecase" or op == "bool":
            hit = actual.lower() in [w.lower() for w in wanted]
        else:  # the Like operators
            hit = any(_like(w, actual) for w in wanted)
        if hit == negated:
            return False
    return True


class _Unsupported(Exception):
    pass


def _conditions_hold(statement: dict[str, Any], context: dict[str, str]) -> bool:
    for operator, key_values in (statement.get("Condition") or {}).items():
        if not isinstance(key_values, dict) or not _condition_holds(operator, key_values, context):
            return False
    return True


def _matches(statement: dict[str, Any], action: str, resource: str) -> bool:
    if "Action" in statement:
        if not any(_like(a, action, True) for a in _listify(statement["Action"])):
            return False
    elif "NotAction" in statement:
        if any(_like(a, action, True) for a in _listify(statement["NotAction"])):
            return False
    else:
        return False
    if "Resource" in statement:
        return any(_like(r, resource) for r in _listify(statement["Resource"]))
    if "NotResource" in statement:
        return not any(_like(r, resource) for r in _listify(statement["NotResource"]))
    return False


def evaluate(documents: list[Any], action: str, resource: str, context: dict[str, str]) -> str:
    """ "allow", "explicit-deny" or "implicit-deny" for `action` on `resource` under the
    identity-based `documents`, with the request `context` (condition keys)."""
    allowed = False
    for raw in documents:
        for statement in _statements(_document(raw)):
            if not _matches(statement, action, resource):
                continue
            try:
                holds = _conditions_hold(statement, context)
            except _Unsupported:
                holds = False
            if not holds:
                continue
            if statement.get("Effect") == "Deny":
                return "explicit-deny"
            if statement.get("Effect") == "Allow":
                allowed = True
    return "allow" if allowed else "implicit-deny"


def _names_scheduler(principal: Any) -> bool:
    if principal == "*":
        return True
    if not isinstance(principal, dict):
        return False
    if "*" in _listify(principal.get("AWS")):
        return True
    return SCHEDULER in _listify(principal.get("Service"))


def trust_allows(trust: Any, context: dict[str, str]) -> bool:
    """May Scheduler assume a role with this trust policy, for a schedule whose context is
    `context` (aws:SourceAccount, aws:SourceArn)? An applicable Deny wins."""
    allowed = False
    for statement in _statements(_document(trust)):
        if not _names_scheduler(statement.get("Principal")):
            continue
        actions = _listify(statement.get("Action"))
        if not any(_like(a, "sts:AssumeRole", True) for a in actions):
            continue
        try:
            holds = _conditions_hold(statement, context)
        except _Unsupported:
            holds = False
        if not holds:
            continue
        if statement.get("Effect") == "Deny":
            return False
        if statement.get("Effect") == "Allow":
            allowed = True
    return allowed


def policies_of(role: Any) -> list[Any]:
    """A moto IAM role's identity-based policies: inline ones and the default version of
    each attached managed policy."""
    docs: list[Any] = list((getattr(role, "policies", None) or {}).values())
    for policy in (getattr(role, "managed_policies", None) or {}).values():
        versions = getattr(policy, "versions", None) or []
        default = next((v for v in versions if getattr(v, "is_default", False)), None)
        if default is not None:
            docs.append(default.document)
    return docs
