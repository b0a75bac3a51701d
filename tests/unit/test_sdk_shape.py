"""The SDK speaks Python: the counts the issue named, each zero or an allow-list entry
with its reason (read from the source with `ast`; nothing outside the product imported).

- CLI words in SDK strings: string constants (not docstrings) outside `cli/` and
  `container/` that name a `peagle` flag or command. The SDK names parameters and calls
  as data (`errors.Param`, `Call`, `Phrase`); the CLI words them (`cli/faces.py`).
- Face switches: a parameter outside `cli/` that makes the SDK behave differently by who
  called it (`_cli`, `cli`, `sdk`, `face`).
- `dict` result subclasses: a public result that is a dict (keys instead of fields).
- JSON documents built in `cli/` outside the one output module: `json.dump(s)`, or a dict
  built in place and handed to the output object as a result.
- `endpoint.py` importing `ops/`, and `ops/` importing `endpoint`.
- Public functions repeating the session: a public SDK function or method taking two or
  more of `region`, `aws`, `say`, `on_connect` (the client holds them once).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "sm_peagle"

# `peagle`'s commands (cli/app.py; test_advice holds advice.command_words() to them), and
# the sandbox plugin's group, which the SDK must not name either.
COMMANDS = (
    "models|instances|schema|plan|deploy|status|ls|logs|update|delete|gc|invoke|chat|apply"
    "|adopt|diff|recommend|bench|sweep|report|race|tune-k|export|iam-policy|drafter|doctor"
    "|sandbox"
)
CLI_WORDS = re.compile(
    r"(?<![\w-])--[a-z][a-z0-9-]+|(?<![\w-])-[a-zA-Z](?![\w-])|"
    rf"\bpeagle (?:--sandbox )?(?:{COMMANDS})\b"
)

# (path under sm_peagle/, a substring of the string; "" for every string of the file) ->
# why it may name a flag. Each is another program's command line, prose the pattern
# mistakes for a command, documentation of a spec field or setting, or a gap named here.
_LOCUST = "locust's own command line and the locustfile's --peagle-* options it parses"
_RESULT_FILES = (
    "written into a results file (JSON, markdown, HTML) that the bench guide reads beside "
    "the CLI; a follow-up words these per face"
)
CLI_WORDS_ALLOWED: dict[tuple[str, str], str] = {
    ("benchmarking/distributed.py", ""): _LOCUST,
    ("benchmarking/locustfile.py", ""): _LOCUST,
    ("benchmarking/html_report.py", "--slo"): _RESULT_FILES,
    ("benchmarking/html_report.py", "-k "): _RESULT_FILES,
    ("benchmarking/html_report.py", " --k-schedule "): _RESULT_FILES,
    ("benchmarking/report.py", "--acceptance-wait 25s"): _RESULT_FILES,
    ("benchmarking/report.py", "-k "): _RESULT_FILES,
    ("benchmarking/report.py", " --k-schedule "): _RESULT_FILES,
    ("benchmarking/report.py", "see `peagle plan`"): _RESULT_FILES,
    ("benchmarking/metrics.py", "--workers"): _RESULT_FILES,
    ("catalog/regional_prices.py", "peagle instances --live-prices"): (
        "the price label is a plain string carried into deploy's confirm question and the "
        "status document; wording it per face needs RegionalPrice.label as a Text (a gap)"
    ),
    ("drafter/check.py", "aws s3 rm"): "the AWS CLI's command, then prose about push",
    ("drafter/check.py", "python -c"): "python's own -c, converting pickled weights",
    ("lifecycle/adopt.py", "would let peagle delete"): "prose, not a command",
    ("ops/doctor.py", "pip install"): "pip's command line",
    ("ops/training_run.py", "aws sagemaker stop-training-job"): (
        "the AWS CLI's command (peagle has none to stop a job), on the run's --endpoint-url"
    ),
    ("ops/training_run.py", " --endpoint-url "): "the AWS CLI's option, in that command",
    ("training/request.py", "-c"): "bash's -c in the job's ContainerEntrypoint",
    ("training/request.py", "python3 -m pip install"): "the job container's own pip command",
    ("training/request.py", "/constraints.txt -r "): "pip's -r, in that command",
    ("planning/spec/model.py", ""): (
        "spec field descriptions: documentation rendered by `schema` and the reference, as "
        "docstrings are"
    ),
    ("planning/steps/environment.py", "--per-request-spec-decode-metrics"): (
        "vLLM's own serve flag"
    ),
    ("planning/steps/scaling.py", "-p"): "a model-name suffix (-p<priority>), not a flag",
    ("vllm/head_loading.py", "peagle models vLLM"): "prose: models is a verb here",
}

FACE_SWITCHES = frozenset(("_cli", "cli", "sdk", "face", "_face", "_sdk"))
# (path, function) -> why it takes a face: the wording machinery itself, which words a
# Text for the face it is given and does nothing else differently.
FACE_ALLOWED: dict[tuple[str, str], str] = {
    ("wording.py", "Text.render"): "words a Text for the face given (wording.Face)",
    ("wording.py", "_render"): "Text.render's part-by-part loop",
    ("wording.py", "render"): "words a message or remedy for the face given",
    ("errors.py", "PeagleError.one_line"): "the one-line error in the face given",
    ("wording.py", "target_phrase"): "takes the face's side of a plugin target's Wording",
    ("wording.py", "phrase_in"): "words a Phrase for the face given (its table or the target)",
}
# (path, function) -> why it calls json.dumps: the JSON is the human rendering's content
# (a policy to paste, a config shown inline), not a `--json` result document.
JSON_ALLOWED: dict[tuple[str, str], str] = {
    ("cli/iac_cmds.py", "_show_policy"): "prints the IAM policy document a user pastes",
    ("cli/plan_cmd.py", "summary_lines"): "shows the speculative config inline, as vLLM takes it",
    ("cli/drafter_cmds.py", "_render_push"): "prints the AdditionalModelDataSources entry to paste",
    ("cli/train_cmd.py", "_render"): "prints the CreateTrainingJob request a dry run would send",
}
SESSION = frozenset(("region", "aws", "say", "on_connect"))
# (module path, qualified name) -> why it still takes two or more session parameters.
SESSION_ALLOWED: dict[tuple[str, str], str] = {
    ("endpoint", "Endpoint.attach"): "deprecated for one release (FutureWarning): "
    "client.endpoint(name) is its spelling now",
}
# (path, imported module) -> why endpoint.py imports ops/ (or ops/ imports endpoint) there.
IMPORTS_ALLOWED: dict[tuple[str, str], str] = {
    ("endpoint.py", "sm_peagle.ops"): "the one-release shims of the names that moved to "
    "ops/deployment.py (deploy, plan, plan_for, Deployment), each with a FutureWarning",
    ("endpoint.py", "sm_peagle.ops.deployment"): "the same shims",
}


def _modules(exclude: tuple[str, ...] = ()) -> Iterator[tuple[str, ast.Module]]:
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.split("/")[0] in exclude or any(rel.startswith(e + "/") for e in exclude):
            continue
        yield rel, ast.parse(path.read_text(), filename=str(path))


def _docstrings(tree: ast.Module) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def cli_words_in_sdk_strings() -> list[tuple[str, int, str]]:
    found = []
    # The CLI's words are its own; the serving container's entrypoint and the training job's
    # script (training/source/, run by SageMaker with `--k 3 …` arguments) are programs
    # of their own, not the SDK.
    for rel, tree in _modules(exclude=("cli", "container", "training/source")):
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in docs
                and CLI_WORDS.search(node.value)
            ):
                found.append((rel, node.lineno, node.value))
    return found


def test_no_sdk_string_names_a_cli_flag_or_command() -> None:
    found = [
        f"{rel}:{line}: {value[:80]!r}"
        for rel, line, value in cli_words_in_sdk_strings()
        if not any(r == rel and s in value for (r, s) in CLI_WORDS_ALLOWED)
    ]
    assert found == [], "name parameters and calls with errors.Param/Call:\n" + "\n".join(found)


def test_every_allowed_cli_string_still_exists() -> None:
    # An allow-list entry whose string is gone is stale: it would hide a new one.
    strings = cli_words_in_sdk_strings()
    stale = [
        key
        for key in CLI_WORDS_ALLOWED
        if not any(r == key[0] and key[1] in v for r, _, v in strings)
    ]
    assert not stale, stale


def _functions(tree: ast.Module) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    def walk(body: list[ast.stmt], prefix: str) -> Iterator[tuple[str, ast.FunctionDef]]:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                yield prefix + node.name, node  # type: ignore[misc]
            elif isinstance(node, ast.ClassDef):
                yield from walk(node.body, f"{prefix}{node.name}.")

    yield from walk(tree.body, "")


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    a = fn.args
    return [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]


def test_no_face_switch_outside_the_cli() -> None:
    found = [
        f"{rel}: {name}({', '.join(sorted(set(_params(fn)) & FACE_SWITCHES))})"
        for rel, tree in _modules(exclude=("cli",))
        for name, fn in _functions(tree)
        if set(_params(fn)) & FACE_SWITCHES and (rel, name) not in FACE_ALLOWED
    ]
    assert not found, "\n".join(found)


def _public_sdk_names() -> dict[str, str]:
    """name -> module (relative dotted) of every public name `sm_peagle` exports."""
    tree = ast.parse((ROOT / "__init__.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "_LAZY" for t in node.targets
        ):
            value = ast.literal_eval(node.value)
            return {k: v for k, v in value.items() if isinstance(v, str)}
    raise AssertionError("sm_peagle/__init__.py has no _LAZY table")


def test_no_public_result_is_a_dict() -> None:
    dict_like = {"dict", "_Doc", "UserDict", "OrderedDict"}
    found = []
    for rel, tree in _modules(exclude=("cli",)):
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                bases = {
                    b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases
                }
                if bases & dict_like:
                    found.append(f"{rel}: {node.name}({', '.join(sorted(bases))})")
    assert not found, "\n".join(found)


def _calls(tree: ast.Module) -> Iterator[tuple[str, ast.Call]]:
    """Every call, with the name of the top-level function it is in ("" at module level)."""
    for node in tree.body:
        name = node.name if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) else ""
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call):
                yield name, sub


def test_the_cli_builds_no_json_document_outside_the_output_module() -> None:
    found = []
    for rel, tree in _modules():
        if not rel.startswith("cli/") or rel == "cli/output.py":
            continue
        for function, node in _calls(tree):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            owner = (
                f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else ""
            )
            if (
                owner == "json"
                and name in ("dump", "dumps")
                and (rel, function) not in JSON_ALLOWED
            ):
                found.append(f"{rel}:{node.lineno}: json.{name}")
            if name in ("result", "stream", "json_document") and node.args:
                first = node.args[0]
                if isinstance(first, ast.Dict | ast.DictComp) or (
                    isinstance(first, ast.Call) and getattr(first.func, "id", "") == "dict"
                ):
                    found.append(f"{rel}:{node.lineno}: {name}() given a dict built here")
    assert not found, "\n".join(found)


def _imports(tree: ast.Module) -> Iterator[tuple[int, str, list[str]]]:
    """Every import that can run (an `if TYPE_CHECKING:` block never does)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            skipped |= {id(n) for child in node.body for n in ast.walk(child)}
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.ImportFrom):
            yield node.level, node.module or "", [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for a in node.names:
                yield 0, a.name, []


def test_endpoint_imports_no_ops_and_ops_imports_no_endpoint() -> None:
    found = []
    tree = ast.parse((ROOT / "endpoint.py").read_text())
    for level, module, names in _imports(tree):
        absolute = module if level == 0 else "sm_peagle." + module
        if ("endpoint.py", absolute) in IMPORTS_ALLOWED:
            continue
        if absolute.startswith("sm_peagle.ops") or (absolute == "sm_peagle" and "ops" in names):
            found.append(f"endpoint.py imports {absolute}")
    for rel, tree in _modules():
        if not rel.startswith("ops/"):
            continue
        for level, module, names in _imports(tree):
            target = module if level == 0 else ("sm_peagle." + module if level == 2 else module)
            if target == "sm_peagle.endpoint" or (target == "sm_peagle" and "endpoint" in names):
                found.append(f"{rel} imports sm_peagle.endpoint")
            if level == 2 and module == "" and "endpoint" in names:
                found.append(f"{rel} imports sm_peagle.endpoint")
    assert not found, "\n".join(found)


def test_no_public_function_repeats_the_session() -> None:
    public = _public_sdk_names()
    modules = set(public.values())
    modules |= {"client", "endpoint"}
    found = []
    for module in sorted(modules):
        path = ROOT / (module.replace(".", "/") + ".py")
        if not path.exists():
            path = ROOT / module.replace(".", "/") / "__init__.py"
        tree = ast.parse(path.read_text())
        for name, fn in _functions(tree):
            if any(part.startswith("_") for part in name.split(".")):
                continue
            repeated = sorted(set(_params(fn)) & SESSION)
            if len(repeated) >= 2 and (module, name) not in SESSION_ALLOWED:
                found.append(f"{module}.{name}({', '.join(repeated)})")
    assert not found, "\n".join(found)
