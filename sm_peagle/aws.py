"""The one place boto3 clients are made.

Every client gets an explicit botocore Config: standard retries (throttling is retried
with backoff), connect/read timeouts, and a connection pool sized to the caller's
concurrency (botocore's default of 10 drops connections under heavier streaming load,
which inflates time-to-first-token). Standard AWS settings keep working: profiles,
AWS_REGION / AWS_DEFAULT_REGION, AWS_ENDPOINT_URL and AWS_ENDPOINT_URL_<SERVICE>. The
target a plugin adds and the tests only change those settings, never this code path.

boto3 is imported inside functions so that `peagle --help` and `peagle plan` never pay
for it.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
import weakref
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from . import settings
from .errors import Call, NoCredentials, Phrase, SpecError, text

__all__ = [
    "NOT_IMPLEMENTED",
    "AwsClock",
    "AwsContext",
    "aws_now",
    "has_credentials_hint",
    "is_not_implemented",
    "resolve_region",
]

DEFAULT_POOL = 10
# Bounded, explicit retries: botocore's `max_attempts` counts retries after the first call,
# so 3 means at most 4 attempts in all. Throttles and 5xx get 3 backed-off retries; an
# unreachable endpoint (no network, a stopped sandbox, a bad AWS_ENDPOINT_URL) fails after
# 4 connection attempts, and the CLI prints one line (see cli/app.py).
MAX_RETRIES = 3
CONNECT_TIMEOUT = 5.0
READ_TIMEOUT = 120.0


def resolve_region(explicit: str | None = None) -> str | None:
    """`explicit`, else the environment's region (AWS_REGION, AWS_DEFAULT_REGION)."""
    return explicit or settings.aws_region()


def has_credentials_hint() -> bool:
    """Cheap guess (no boto3) whether any AWS credentials could be found."""
    return settings.aws_credentials_hint()


class AwsClock:
    """AWS's time, as the `Date` header of its answers tells it.

    Anything about AWS resources (their ages, an operation's deadline, a log window) is
    judged on the clock that stamped them, not this machine's: a laptop's clock may be off,
    and a sandbox's clock may run fast or be days ahead. AWS's now is the latest Date seen
    plus the local monotonic time since it arrived; before any answer, the local clock.
    Date has one-second resolution (RFC 7231, truncated), so when the local clock falls
    within that second of it (`AGREE`), the two cannot be told apart and the local clock,
    which is finer, is AWS's: against AWS itself, whose clocks and ours keep NTP time,
    nothing changes. Waiting (timeouts, poll intervals) is not about AWS's resources and
    stays local."""

    # local - (Date + time since): in [0, 1 s) when the clocks agree (Date truncates), plus
    # the answer's latency and a little skew either way.
    AGREE = (-0.25, 1.25)

    def __init__(
        self,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self._lock = threading.Lock()
        # A test's stand-ins move these instead of sleeping.
        self._monotonic, self._wall = monotonic, wall
        self._seen: tuple[float, float] | None = None  # (Date epoch, monotonic when read)

    @property
    def seen(self) -> bool:
        """Whether any answer's Date has been read yet."""
        return self._seen is not None

    def observe(self, date: str | None) -> None:
        """Record an answer's Date header (RFC 7231 IMF-fixdate); unreadable: ignored."""
        if not date:
            return
        try:
            when = parsedate_to_datetime(date)
        except (TypeError, ValueError, IndexError):
            return
        if when.tzinfo is None:  # "-0000": UTC by RFC 5322
            when = when.replace(tzinfo=UTC)
        with self._lock:
            # The latest answer wins, even if it is earlier than one before it: a sandbox
            # clock may be frozen (its Date stands still) or set back.
            self._seen = (when.timestamp(), self._monotonic())

    def offset(self) -> float:
        """Seconds AWS's clock is ahead of the local one (negative: behind); 0.0 before
        any answer, or when they agree within Date's resolution (`AGREE`)."""
        with self._lock:
            seen = self._seen
        if seen is None:
            return 0.0
        date, at = seen
        ahead = date + (self._monotonic() - at) - self._wall()
        low, high = self.AGREE
        return 0.0 if low <= -ahead < high else ahead

    def now(self) -> datetime:
        """AWS's now (aware UTC): the local clock plus `offset()`."""
        offset = self.offset()  # read first: the wall clock below is the later one
        return datetime.fromtimestamp(self._wall() + offset, UTC)


# Each client `AwsContext.client` made -> its context's clock; weak, so a dropped client
# goes with its entry. Functions handed only a client (gc, status) find AWS's time here.
_CLOCKS: weakref.WeakKeyDictionary[Any, AwsClock] = weakref.WeakKeyDictionary()


def aws_now(client: Any = None) -> datetime:
    """AWS's now as `client` (one `AwsContext.client` made) last heard it; a client made
    elsewhere, or none: the local clock."""
    try:
        clock = _CLOCKS.get(client)
    except TypeError:  # not weakly referable (a stand-in): not one of ours
        clock = None
    return clock.now() if clock is not None else datetime.now(UTC)


def _observe_dates(client: Any, clock: AwsClock) -> None:
    """Every answer `client` receives, each retried attempt and error answers included,
    gives `clock` its Date (botocore's `response-received` event: no answer, no Date)."""

    def received(response_dict: dict[str, Any] | None = None, **_: Any) -> None:
        headers = (response_dict or {}).get("headers") or {}
        date = next((v for k, v in headers.items() if str(k).lower() == "date"), None)
        clock.observe(date)

    hyphenized = client.meta.service_model.service_id.hyphenize()
    client.meta.events.register(f"response-received.{hyphenized}", received)
    _CLOCKS[client] = clock


class AwsContext:
    """A boto3 session plus cached clients. One per deployment run or SDK handle.

    `endpoint_url` sends every service's requests to one URL (as the sandbox serves them
    all, or moto's server), whatever AWS_ENDPOINT_URL says; `credentials` (access key id,
    secret) are used instead of the credential chain, so a client aimed at such an
    endpoint never sends the user's real keys there. Without them, standard settings
    apply (profiles, AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_<SERVICE>). `session`: a boto3
    session to use as it is (another library's identity, see `from_session`)."""

    def __init__(
        self,
        region: str | None = None,
        profile: str | None = None,
        *,
        endpoint_url: str | None = None,
        credentials: tuple[str, str] | None = None,
        max_pool_connections: int = DEFAULT_POOL,
        retry_mode: str = "standard",
        max_attempts: int = MAX_RETRIES,
        connect_timeout: float = CONNECT_TIMEOUT,
        read_timeout: float = READ_TIMEOUT,
        session: Any = None,
        aws_clock: AwsClock | None = None,
    ) -> None:
        self._region = region
        self._profile = profile
        self.endpoint_url = endpoint_url
        self._credentials = credentials
        self.max_pool_connections = max_pool_connections
        self.retry_mode = retry_mode
        self.max_attempts = max_attempts
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        # A given session is kept (and handed on by `derive`); otherwise one is made on
        # first use, so making a context costs no boto3 import.
        self._given_session = session
        self._session: Any = session
        self._clients: dict[tuple[str, str | None], Any] = {}
        self._lock = threading.Lock()
        # AWS's time as this context's answers tell it; `derive` shares it (same target).
        self.aws_clock = aws_clock or AwsClock()

    def aws_now(self) -> datetime:
        """AWS's now (`AwsClock.now`): the latest Date any of this context's clients got."""
        return self.aws_clock.now()

    def synced_aws_now(self) -> datetime:
        """`aws_now()` after at least one answer: when none came yet, one cheap call that
        every identity may make (STS GetCallerIdentity) reads AWS's Date first. For a
        time written onto a resource (an operation's deadline), which must not be on the
        local clock when AWS's differs."""
        if not self.aws_clock.seen:
            # Cannot ask: the local clock, as before any answer.
            with contextlib.suppress(Exception):
                self.client("sts").get_caller_identity()
        return self.aws_now()

    @property
    def session(self) -> Any:
        if self._session is None:
            import boto3

            keys: dict[str, str] = {}
            if self._credentials is not None:
                key_id, secret = self._credentials
                keys = {"aws_access_key_id": key_id, "aws_secret_access_key": secret}
            self._session = boto3.session.Session(
                profile_name=self._profile, region_name=resolve_region(self._region), **keys
            )
        return self._session

    @classmethod
    def from_session(cls, session: Any, region: str | None = None, **settings: Any) -> AwsContext:
        """A context on `session`'s identity (a boto3 Session another library made, e.g.
        the sagemaker SDK's) in `region` (None: the session's own). A session made for
        another region is rebound to `region` over the same botocore session, so the
        credentials and their cache are shared, never re-resolved."""
        if region and session.region_name != region:
            import boto3

            # boto3 has no public accessor for a Session's botocore session (`_session`);
            # `botocore_session=` is Session's documented way to share one.
            session = boto3.session.Session(botocore_session=session._session, region_name=region)
        return cls(region or session.region_name, session=session, **settings)

    @property
    def given_region(self) -> str | None:
        """The region this context was made for (None: the environment's), read without
        making a boto3 session."""
        return self._region

    def derive(self, **settings: Any) -> AwsContext:
        """A new context on the same target (region, profile, endpoint URL, credentials)
        with other client settings (`max_pool_connections`, `max_attempts`, timeouts)."""
        kept = {
            "max_pool_connections": self.max_pool_connections,
            "retry_mode": self.retry_mode,
            "max_attempts": self.max_attempts,
            "connect_timeout": self.connect_timeout,
            "read_timeout": self.read_timeout,
        }
        return AwsContext(
            self._region,
            self._profile,
            endpoint_url=self.endpoint_url,
            credentials=self._credentials,
            session=self._given_session,
            aws_clock=self.aws_clock,
            **(kept | settings),
        )

    def __repr__(self) -> str:
        where = [f"region={self._region!r}" if self._region else "region from the environment"]
        if self._profile:
            where.append(f"profile={self._profile!r}")
        if self.endpoint_url:
            where.append(f"endpoint_url={self.endpoint_url!r}")
        return f"AwsContext({', '.join(where)})"

    @property
    def region(self) -> str:
        region = self.session.region_name
        if not region:
            raise NoCredentials(
                "no AWS region configured",
                remedy=_no_region_fix(),
            )
        from .catalog.regions import region_problem

        problem = region_problem(region)
        if problem:  # e.g. AWS_REGION=mars-1: say so, instead of retrying a DNS name
            raise SpecError(
                f"region: {problem}",
                remedy=text("pass {region} or fix AWS_REGION"),
                field="region",
                value=region,
            )
        return region

    def config(self, **overrides: Any) -> Any:
        from botocore.config import Config

        settings: dict[str, Any] = {
            # total_max_attempts = max_attempts + 1; stated explicitly, so no env var or
            # profile setting (AWS_MAX_ATTEMPTS) can make a command retry for minutes.
            "retries": {
                "mode": self.retry_mode,
                "total_max_attempts": self.max_attempts + 1,
            },
            "connect_timeout": self.connect_timeout,
            "read_timeout": self.read_timeout,
            "max_pool_connections": self.max_pool_connections,
            "user_agent_extra": "peagle",
        }
        settings.update(overrides)
        return Config(**settings)

    def client(self, service: str, region: str | None = None, **config: Any) -> Any:
        """A cached client. `region` overrides (the Price List API lives in us-east-1)."""
        key = (service, region)
        with self._lock:
            if key not in self._clients or config:
                client = self.session.client(
                    service,
                    region_name=region or self.region,
                    config=self.config(**config),
                    endpoint_url=self.endpoint_url,  # None: the standard settings decide
                )
                _name_unimplemented_calls(client)
                _observe_dates(client, self.aws_clock)
                if config:
                    return client
                self._clients[key] = client
            return self._clients[key]

    def endpoint_url_for(self, service: str) -> str | None:
        """The URL `service`'s clients from this context talk to: the context's own
        `endpoint_url`, which wins over the environment as botocore's explicit argument
        does, else the environment's (`settings.aws_endpoint_url`); None: AWS's."""
        return self.endpoint_url or settings.aws_endpoint_url(service)

    def check_credentials(self) -> None:
        """Fail fast, in one line, when no credentials can be found at all."""
        if self.session.get_credentials() is None:
            raise NoCredentials(
                "no AWS credentials found",
                remedy=_no_credentials_fix(),
            )

    def account_id(self) -> str:
        return self.client("sts").get_caller_identity()["Account"]


# The remedies below name a plugin target's words (`Phrase("local")`), which asks the
# installed plugins: built when an error needs them, never at import.
def _no_region_fix() -> Any:
    return text("pass {region}, set AWS_REGION, or use {s}", s=Phrase("local"))


def _no_credentials_fix() -> Any:
    return text("configure AWS (aws configure / AWS_PROFILE) or run with {s}", s=Phrase("local"))


# The Error.Code peagle gives an answer that says the server does not implement the call
# (see `_name_unimplemented_calls`); AWS itself never sends it.
NOT_IMPLEMENTED = "NotImplementedByThisEndpoint"
_MOTO_UNIMPLEMENTED = re.compile(r"The (\w+) action has not been implemented")


def _not_implemented_fix() -> Any:
    return text(
        "stock moto lacks this call: test with peagle's moto harness "
        "(docs/guides/ci-moto.md) or {s}, or against AWS",
        s=Phrase("local_run"),
    )


def _is_aws_host(url: str | None) -> bool:
    from urllib.parse import urlsplit

    host = (urlsplit(url or "").hostname or "").lower()
    return host.endswith((".amazonaws.com", ".amazonaws.com.cn", ".api.aws"))


def _unimplemented_answer(http_response: Any) -> bool:
    """An answer that only a server lacking the operation gives: 501 Not Implemented
    (LocalStack), or a 500 whose body is an HTML page (moto's server: its
    NotImplementedError becomes werkzeug's "Internal Server Error" page)."""
    status = getattr(http_response, "status_code", None)
    if status == 501:
        return True
    if status != 500:
        return False
    head = (getattr(http_response, "content", b"") or b"")[:256].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html"))


def _name_unimplemented_calls(client: Any) -> None:
    """Make a call the server does not implement say which call it was, in one line.

    In process (`mock_aws`) moto raises NotImplementedError, which AWS never does: it gets
    the call's name as `peagle_call`. Over HTTP (moto's server) the answer's Error becomes
    {Code: NOT_IMPLEMENTED, Message: "<Service> <Operation>"} instead of the HTML page;
    only for an endpoint that is not AWS's (AWS_ENDPOINT_URL: moto, LocalStack), so every
    answer from AWS is reported exactly as before."""
    service = client.meta.service_model.service_id
    events = client.meta.events
    hyphenized = service.hyphenize()

    def after_call(http_response: Any, parsed: dict, model: Any, **_: Any) -> None:
        if _unimplemented_answer(http_response):
            metadata = parsed.get("ResponseMetadata", {})
            parsed.clear()
            parsed["ResponseMetadata"] = metadata
            parsed["Error"] = {"Code": NOT_IMPLEMENTED, "Message": f"{service} {model.name}"}

    def after_call_error(exception: BaseException, event_name: str, **_: Any) -> None:
        if isinstance(exception, NotImplementedError) and _MOTO_UNIMPLEMENTED.search(
            str(exception)
        ):
            operation = event_name.rsplit(".", 1)[-1]
            exception.peagle_call = f"{service} {operation}"  # type: ignore[attr-defined]

    events.register(f"after-call-error.{hyphenized}", after_call_error)
    if not _is_aws_host(client.meta.endpoint_url):
        events.register(f"after-call.{hyphenized}", after_call)


def _unimplemented_call(exc: BaseException) -> str | None:
    """The call `exc` says the server does not implement ("SageMaker
    ListInferenceComponents", see `_name_unimplemented_calls`); None otherwise."""
    if isinstance(exc, NotImplementedError):
        named = getattr(exc, "peagle_call", None)
        if named:
            return str(named)
        match = _MOTO_UNIMPLEMENTED.search(str(exc))  # a client peagle did not make
        if match:
            return "".join(w.capitalize() for w in match.group(1).split("_"))
        return None
    response = getattr(exc, "response", None)
    if not isinstance(response, dict):
        return None
    err = response.get("Error", {})
    if err.get("Code") == NOT_IMPLEMENTED:
        return str(err.get("Message") or getattr(exc, "operation_name", "?"))
    return None


def is_not_implemented(exc: BaseException) -> bool:
    """True when `exc` says the server (moto, LocalStack) does not implement the call;
    never for an answer from AWS itself."""
    return _unimplemented_call(exc) is not None


_UNREACHABLE = (
    "EndpointConnectionError",
    "ConnectTimeoutError",
    "ConnectionClosedError",
    "ReadTimeoutError",
    "ProxyConnectionError",
    "SSLError",
    "HTTPClientError",
)


def as_peagle_error(exc: BaseException) -> Exception | None:
    """A botocore exception (or moto's NotImplementedError) as the typed peagle error the
    CLI prints in one line; None if `exc` is neither. botocore is only consulted if it is
    already imported. A call the server does not implement is named, never its HTML page."""
    import sys

    call = _unimplemented_call(exc)
    if call is not None:
        from .errors import AwsError

        return AwsError(
            f"{call} is not implemented by this endpoint (moto?)", remedy=_not_implemented_fix()
        )
    if "botocore.exceptions" not in sys.modules:
        return None
    from botocore import exceptions as bx

    from .errors import AwsError, AwsUnreachable

    if isinstance(exc, bx.ClientError):
        err = exc.response.get("Error", {})
        code, message = err.get("Code", "Error"), err.get("Message", "")
        remedy = None
        if code in ("ExpiredToken", "ExpiredTokenException", "UnrecognizedClientException"):
            remedy = "refresh your AWS credentials (aws sso login / aws configure)"
        elif "AccessDenied" in code:
            remedy = text(
                "your AWS identity lacks this permission; see `{p}`", p=Call("iam_policy")
            )
        refused = _enum_refusal(message)
        if refused is not None:
            message, remedy = refused
        return AwsError(f"{exc.operation_name} failed: {code}: {message}", remedy=remedy)
    if isinstance(exc, bx.NoCredentialsError | bx.PartialCredentialsError):
        return NoCredentials(
            f"AWS credentials: {exc}",
            remedy=_no_credentials_fix(),
        )
    if isinstance(exc, bx.NoRegionError):
        return NoCredentials("no AWS region configured", remedy=_no_region_fix())
    if type(exc).__name__ in _UNREACHABLE or isinstance(exc, bx.HTTPClientError):
        where = getattr(exc, "kwargs", {}).get("endpoint_url") or "AWS"
        from . import plugins

        state = plugins.current_target()
        if state is not None:  # a plugin's target: its own remedy (wording.TARGET_PHRASES)
            remedy = text(f"the {state.name} did not answer: {{s}}", s=Phrase("unreachable"))
        elif where != "AWS" and not _is_aws_host(where):
            # A server the environment (or the caller's endpoint_url) named: say which.
            named = [
                name
                for name, url in settings.configured_endpoint_urls().items()
                if url.rstrip("/") == str(where).rstrip("/")
            ]
            remedy = (
                f"check {named[0] if named else 'the endpoint URL'} and that its server is running"
            )
        else:
            remedy = text(
                "check the network, a proxy, or the region; or run with {s}", s=Phrase("local")
            )
        return AwsUnreachable(
            f"cannot reach {where} ({type(exc).__name__}; gave up after retrying)",
            remedy=remedy,
        )
    if isinstance(exc, bx.BotoCoreError):
        return AwsError(f"AWS client error: {exc}")
    return None


# "Value 'X' at 'F' failed to satisfy constraint: Member must satisfy enum value set: [...]":
# AWS's (and moto's) wording for a value outside an enum. moto appends its whole list (about
# 70 instance types, 1,300 characters), which must not become the error line.
_ENUM_REFUSAL = re.compile(
    r"Value '(?P<value>[^']*)' at '(?P<field>[^']*)' failed to satisfy constraint: "
    r"Member must satisfy enum value set: \[(?P<values>[^\]]*)\]"
)


def _enum_refusal(message: str) -> tuple[str, str] | None:
    """(short message, remedy) for an enum refusal; None for any other message. A refused
    instance type that botocore's own SageMaker model lists means the server's list is
    older than the API (stock moto lacks every modern GPU type): the fix names the ways to
    a server that has it."""
    match = _ENUM_REFUSAL.search(message)
    if match is None:
        return None
    value, field = match["value"], match["field"]
    count = len([v for v in match["values"].split(",") if v.strip()])
    short = f"'{value}' at '{field}' is not among this server's {count} values"
    if field.lower().endswith("instancetype") and value in _botocore_instance_types():
        short = f"instance type '{value}' is not among this server's {count}"
        return short, text(
            "stock moto lacks the GPU types: use {s}, peagle's moto harness "
            "(docs/guides/ci-moto.md), or add the type to moto's validate_instance_type",
            s=Phrase("local_run"),
        )
    return short, "use one of the values the API documents for that field"


def _botocore_instance_types() -> frozenset[str]:
    """ProductionVariantInstanceType's enum in the installed botocore's SageMaker model."""
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    return frozenset(model.shape_for("ProductionVariantInstanceType").enum)
