"""``python -m app check-scheduler-config FILE [--url URL]``: a preflight for a user's
``KubeSchedulerConfiguration`` before kube-scheduler reads it.

1. Strict decoding (:func:`app.deploy.kubesched.decode`): unknown or mis-cased keys, duplicate
   keys and wrongly typed values are errors, as in kube-scheduler v1.
2. Upstream validation (:func:`app.deploy.kubesched.validate`), then what upstream accepts but
   breaks in practice (``makeTransport``, ``NewHTTPExtender``: pkg/scheduler/extender.go):
   ``enableHTTPS`` without a CA (kube-scheduler then does not verify the certificate), a CA
   together with ``insecure`` (kube-scheduler refuses to start), ``enableHTTPS`` on an
   ``http://`` prefix (it does not switch the scheme), managed resources without
   ``ignoredByScheduler``.
3. Against the running service (unless ``--offline``), per extender entry: the profile its
   ``urlPrefix`` names exists; each configured verb answers at ``urlPrefix + "/" + verb`` (as
   kube-scheduler builds the URL) with its result type; ``nodeCacheCapable`` and the verbs match
   the profile; the scheme and client certificate match the server's TLS. Requests have no side
   effects: filter, prioritize and preempt get an empty candidate list, bind a malformed body that
   a serving route refuses with 400 in ``ExtenderBindingResult``. Each carries
   :data:`~app.observe.logs.PROBE_HEADER`: the service answers it as any request (refusals
   included) but records no decision, writes no info line and counts it in no request metric.

Files the entry's ``tlsConfig`` names (``caFile``, ``certFile``, ``keyFile``; each unless its
``...Data`` is set, which client-go prefers) are read up front, offline too: kube-scheduler reads
them when it builds the extender's client and does not start without them. Each missing or
unreadable one is an error naming the field and the path, and that entry's live checks are
skipped. One root cause is reported once: a probe whose answer would only repeat a mismatch
already reported (``nodeCacheCapable``, a verb the profile does not serve or serves under another
name, a client certificate the service requires) is skipped, and the report says so.

Exit code 0 when there is no error (warnings allowed), 1 otherwise.
"""

from __future__ import annotations

import base64
import re
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx
import orjson
import yaml

from app.deploy.kubesched import Extender, KubeConfigDecodeError, decode, validate
from app.framework.profile import parse_duration
from app.observe.logs import PROBE_HEADER

#: What the probes send as :data:`~app.observe.logs.PROBE_HEADER`.
PROBE_HEADERS = {PROBE_HEADER.decode(): "check-scheduler-config"}

_PROBE_POD = {
    "metadata": {"name": "preflight", "namespace": "default", "uid": "00000000-0000-0000-0000-000000000000"},
    "spec": {"containers": [{"name": "preflight", "image": "registry.k8s.io/pause:3.10"}]},
    "status": {},
}


@dataclass
class Report:
    """Findings in order: ``(level, scope, message)`` with level ``ok``, ``warning``, ``error``
    or ``skipped`` (checks not run because of an error reported before them)."""

    findings: list[tuple[str, str, str]] = field(default_factory=list)

    def add(self, level: str, scope: str, message: str) -> None:
        """Record one finding."""
        self.findings.append((level, scope, message))

    @property
    def errors(self) -> int:
        """How many errors."""
        return sum(1 for level, _, _ in self.findings if level == "error")

    @property
    def warnings(self) -> int:
        """How many warnings."""
        return sum(1 for level, _, _ in self.findings if level == "warning")

    def render(self) -> str:
        """The readable report: one line per finding, grouped by scope, and a summary line."""
        lines: list[str] = []
        scope = None
        for level, where, message in self.findings:
            if where != scope:
                lines.append(where)
                scope = where
            lines.append(f"  {level.upper():8} {message}")
        skipped = any(level == "skipped" for level, _, _ in self.findings)
        summary = f"result: {self.errors} error(s), {self.warnings} warning(s)"
        lines.append(summary + ("; checks that depend on an error were skipped (SKIPPED)" if skipped else ""))
        return "\n".join(lines)


def _scope(i: int, ext: Extender) -> str:
    """How the report names the ``i``-th extender entry."""
    return f"extenders[{i}] {ext.url_prefix or '(no urlPrefix)'}"


def _static_checks(report: Report, i: int, ext: Extender) -> None:
    scope = _scope(i, ext)
    if not ext.url_prefix:
        report.add(
            "error", scope, "urlPrefix is empty: kube-scheduler would POST to a relative URL and fail every call"
        )
        return
    parts = urlsplit(ext.url_prefix)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        report.add("error", scope, f"urlPrefix {ext.url_prefix!r} is not an http:// or https:// URL")
    if not ext.verbs:
        report.add("warning", scope, "no verb is configured: kube-scheduler never calls this extender")
    tls = ext.tls_config
    if ext.enable_https and parts.scheme == "http":
        report.add(
            "warning",
            scope,
            "enableHTTPS: true does not switch the scheme: urlPrefix is http://, so the connection is plain HTTP",
        )
    if ext.enable_https and (tls is None or not tls.has_ca) and not (tls is not None and tls.insecure):
        report.add(
            "warning",
            scope,
            "!!! enableHTTPS without tlsConfig.caFile/caData: kube-scheduler will NOT verify the extender's "
            "certificate (client-go treats a missing CA as insecure). Set tlsConfig.caFile to the CA that "
            "signed the extender's certificate.",
        )
    if tls is not None:
        if tls.insecure and tls.has_ca:
            report.add(
                "error",
                scope,
                "tlsConfig: a CA with insecure: true: kube-scheduler fails to build the extender "
                "(specifying a root certificates file with the insecure flag is not allowed)",
            )
        elif tls.insecure:
            report.add("warning", scope, "tlsConfig.insecure: true: the extender's certificate is not verified")
        if bool(tls.cert_file or tls.cert_data) != bool(tls.key_file or tls.key_data):
            report.add(
                "error", scope, "tlsConfig: a client certificate needs both certFile/certData and keyFile/keyData"
            )
        if (tls.cert_file or tls.ca_file) and not ext.enable_https and parts.scheme == "https":
            report.add(
                "warning", scope, "tlsConfig is ignored unless enableHTTPS: true (kube-scheduler's makeTransport)"
            )
    for res in ext.managed_resources or []:
        if not res.ignored_by_scheduler:
            report.add(
                "warning",
                scope,
                f"managedResources {res.name!r} without ignoredByScheduler: true: kube-scheduler's NodeResourcesFit "
                "still checks it, so a pod asking for it fails on every node that does not advertise it "
                "before the extender is called",
            )


def _tls_files(report: Report, scope: str, ext: Extender) -> bool:
    """Read each file ``tlsConfig`` names (unless its data field is set: client-go's
    ``dataFromSliceOrFile`` then never opens the file); an error per missing or unreadable one,
    naming its field and path. True when every named file could be read."""
    tls = ext.tls_config
    if tls is None:
        return True
    readable = True
    for field_name, path, data in (
        ("caFile", tls.ca_file, tls.ca_data),
        ("certFile", tls.cert_file, tls.cert_data),
        ("keyFile", tls.key_file, tls.key_data),
    ):
        if not path or data:
            continue
        try:
            with open(path, "rb") as f:
                f.read(1)
        except OSError as exc:
            readable = False
            if isinstance(exc, FileNotFoundError):
                why = "no such file"
            elif isinstance(exc, PermissionError):
                why = "permission denied (run the check as kube-scheduler's user, root on kubeadm nodes)"
            else:
                why = exc.strerror or str(exc)
            report.add(
                "error",
                scope,
                f"tlsConfig.{field_name}: cannot read {path}: {why} (kube-scheduler reads it when it builds "
                "the extender's client, and does not start without it)",
            )
    return readable


class _SetupError(Exception):
    """The probes' client cannot be built as kube-scheduler's would be (the message says which
    field's file or data is at fault)."""


def _client(ext: Extender, timeout: float) -> httpx.Client:
    tls = ext.tls_config
    verify: ssl.SSLContext | bool = True
    if ext.enable_https and (tls is None or not tls.has_ca or tls.insecure):
        verify = False  # what kube-scheduler does: no CA means no verification
    elif ext.enable_https and tls is not None:
        # client-go prefers caData to caFile (dataFromSliceOrFile)
        what = "tlsConfig.caData" if tls.ca_data else f"tlsConfig.caFile {tls.ca_file}"
        try:
            if tls.ca_data:
                context = ssl.create_default_context(cadata=_pem(tls.ca_data))
            else:
                context = ssl.create_default_context(cafile=tls.ca_file)
        except (OSError, ValueError) as exc:
            raise _SetupError(f"{what}: not a usable PEM CA certificate: {exc}") from exc
        if tls.has_client_cert and tls.cert_file and tls.key_file:
            try:
                context.load_cert_chain(tls.cert_file, tls.key_file)
            except (OSError, ValueError) as exc:
                raise _SetupError(
                    f"tlsConfig.certFile {tls.cert_file} and keyFile {tls.key_file}: not a usable PEM certificate "
                    f"and key: {exc}"
                ) from exc
        verify = context
    return httpx.Client(timeout=timeout, verify=verify, headers=PROBE_HEADERS)


def _pem(data: str | None) -> str | None:
    return base64.b64decode(data).decode() if data else None


def _body(verb: str, cache: bool) -> bytes:
    nodes: dict[str, Any] = (
        {"Nodes": None, "NodeNames": []} if cache else {"Nodes": {"metadata": {}, "items": []}, "NodeNames": None}
    )
    if verb in ("filter", "prioritize"):
        return orjson.dumps({"Pod": _PROBE_POD, **nodes})
    if verb == "preempt":
        victims: dict[str, Any] = {"NodeNameToVictims": None, "NodeNameToMetaVictims": {}}
        if not cache:
            victims = {"NodeNameToVictims": {}, "NodeNameToMetaVictims": None}
        return orjson.dumps({"Pod": _PROBE_POD, **victims})
    return b"[]"  # bind: a malformed body, refused with 400 by a route that serves bind


def _expected_shape(verb: str, status: int, body: bytes) -> str | None:
    """``None`` when the answer is the verb's result type as kube-scheduler reads it, else why not."""
    try:
        data = orjson.loads(body) if body else None
    except orjson.JSONDecodeError:
        return "the answer is not JSON"
    if verb == "bind":
        if status == 400 and isinstance(data, dict) and "Error" in data:
            return None
        if status == 403 and isinstance(data, dict):
            # the service refused the caller before reading the body: the client certificate of
            # tlsConfig (certFile/keyFile) does not name an identity of server.tls.allowedClients
            return f"bind refused this client (403): {data.get('Error')}"
        return f"expected 400 with an ExtenderBindingResult for a malformed body, got {status}"
    if status != 200:
        return f"HTTP {status} (kube-scheduler treats anything but 200 as a failed call)"
    if verb == "prioritize":
        return None if isinstance(data, list) else "not a JSON array (HostPriorityList)"
    if not isinstance(data, dict):
        return "not a JSON object"
    if verb == "filter" and data.get("Error"):
        return f"the filter answered Error: {data['Error']}"
    return None


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, "", "", ""))


def _live_checks(report: Report, i: int, ext: Extender, base: str | None, timeout: float) -> None:
    prefix = ext.url_prefix.rstrip("/")
    parts = urlsplit(prefix)
    if base:
        b = urlsplit(base.rstrip("/"))
        prefix = urlunsplit((b.scheme, b.netloc, b.path + parts.path, "", ""))
    scope = f"extenders[{i}] {ext.url_prefix}" + (f" (checked at {prefix})" if base else "")
    try:
        with _client(ext, timeout) as client:
            # tlsConfig.serverName: the name the certificate is checked against (and sent as SNI)
            sni = ext.tls_config.server_name if ext.enable_https and ext.tls_config else ""
            extensions = {"sni_hostname": sni} if sni else None
            info = client.get(_origin(prefix) + "/profiles", extensions=extensions)
            if info.status_code != 200:
                report.add(
                    "error", scope, f"GET {_origin(prefix)}/profiles answered {info.status_code}: not this service"
                )
                return
            served = info.json()
            path = urlsplit(prefix).path.strip("/")
            name = path or served.get("defaultProfile")
            profiles = {p["name"]: p for p in served["profiles"]}
            if name not in profiles:
                known = ", ".join(f"/{n}" for n in profiles)
                report.add(
                    "error",
                    scope,
                    f"urlPrefix path {('/' + path) if path else '/'!r} names no profile (served: {known})",
                )
                return
            profile = profiles[name]
            report.add("ok", scope, f"urlPrefix reaches profile {name!r}")
            explained = _compare(report, scope, ext, profile, served, urlsplit(ext.url_prefix).scheme)
            ready = client.get(_origin(prefix) + "/readyz", extensions=extensions)
            not_ready = ready.status_code != 200
            if not_ready:
                report.add("warning", scope, f"the service is not ready: {ready.text.strip()}")
            skipped: dict[str, list[str]] = {}
            for kind, verb in ext.verbs.items():
                if kind in explained:  # its answer would only repeat an error reported above
                    skipped.setdefault(explained[kind], []).append(f"{kind}Verb")
                    continue
                url = prefix + "/" + verb  # strings.TrimRight(urlPrefix, "/") + "/" + verb
                body = _body(kind, ext.node_cache_capable)
                r = client.post(url, content=body, headers={"Content-Type": "application/json"}, extensions=extensions)
                if r.status_code == 404:
                    report.add(
                        "error", scope, f"{kind}Verb {verb!r}: POST {url} answered 404: not served by this profile"
                    )
                    continue
                problem = _expected_shape(kind, r.status_code, r.content)
                if problem and not_ready and r.status_code in (200, 503):
                    report.add("warning", scope, f"{kind}Verb {verb!r} answers, but not yet usefully: {problem}")
                elif problem:
                    report.add("error", scope, f"{kind}Verb {verb!r}: POST {url}: {problem}")
                else:
                    report.add("ok", scope, f"{kind}Verb {verb!r} answers at {url}")
            for reason, kinds in skipped.items():
                report.add("skipped", scope, f"{', '.join(kinds)} not probed: {reason}")
    except _SetupError as exc:
        report.add("error", scope, f"cannot set up the connection: {exc}")
    except httpx.HTTPError as exc:
        report.add("error", scope, f"cannot reach the extender: {type(exc).__name__}: {exc}")
    except (OSError, ssl.SSLError, ValueError) as exc:
        report.add("error", scope, f"cannot set up the connection: {exc}")


def _compare(
    report: Report, scope: str, ext: Extender, profile: dict[str, Any], served: dict[str, Any], scheme: str
) -> dict[str, str]:
    """Compare the entry with the profile the service serves; returns the verbs whose probe would
    only repeat an error reported here, each with why it is skipped."""
    name = profile["name"]
    explained: dict[str, str] = {}
    if ext.node_cache_capable != profile["nodeCacheCapable"]:
        report.add(
            "error",
            scope,
            f"nodeCacheCapable: {str(ext.node_cache_capable).lower()}, but profile {name!r} has "
            f"nodeCacheCapable: {str(profile['nodeCacheCapable']).lower()}",
        )
        for verb in ("filter", "prioritize", "preempt"):  # bind's arguments do not depend on it
            explained[verb] = "the nodeCacheCapable mismatch above decides their answers; fix it and check again"
    else:
        report.add("ok", scope, f"nodeCacheCapable: {str(ext.node_cache_capable).lower()} matches the profile")
    configured = set(ext.verbs)
    for verb in sorted(configured - set(profile["verbs"])):
        report.add("error", scope, f"{verb}Verb is configured but profile {name!r} does not serve {verb}")
        explained[verb] = f"profile {name!r} does not serve it (above)"
    for verb in sorted(set(profile["verbs"]) - configured):
        report.add(
            "warning",
            scope,
            f"profile {name!r} serves {verb} but the entry has no {verb}Verb: kube-scheduler will not call it",
        )
    for kind, verb in ext.verbs.items():
        if verb != kind:
            report.add("error", scope, f"{kind}Verb is {verb!r}: this service answers {kind} at {kind!r}")
            explained.setdefault(kind, f"this service does not answer at {verb!r} (above)")
    if ext.ignorable != profile["ignorable"]:
        report.add(
            "warning",
            scope,
            f"ignorable: {str(ext.ignorable).lower()} differs from the profile's {str(profile['ignorable']).lower()}",
        )
    want = {r["name"]: r["ignoredByScheduler"] for r in profile["managedResources"]}
    have = {r.name: r.ignored_by_scheduler for r in ext.managed_resources or []}
    hiding = sorted(set(have) - set(want))
    if hiding:
        # the service validates that a profile's own managedResources hide no pod from its
        # policies; resources on the entry only make kube-scheduler skip every other pod
        report.add(
            "error",
            scope,
            f"managedResources {', '.join(hiding)}: kube-scheduler would call this extender only for pods that "
            f"request them (HTTPExtender.IsInterested), hiding every other pod from profile {name!r}, which does "
            "not declare them: remove them from this entry, or give them to a profile of their own",
        )
    elif want != have:
        report.add("warning", scope, f"managedResources {have} differ from the profile's {want}")
    expected = parse_duration(profile["httpTimeout"])
    if abs(ext.http_timeout_seconds - expected) > 1e-9:
        report.add(
            "warning",
            scope,
            f"httpTimeout is {ext.http_timeout_seconds:g}s but the profile is built for {expected:g}s "
            "(plugins that wait, such as a binder, answer within the profile's value)",
        )
    if served["tls"] and scheme != "https":
        report.add("error", scope, "the service serves HTTPS but urlPrefix is http://")
    if not served["tls"] and scheme == "https":
        report.add("error", scope, "urlPrefix is https:// but the service serves plain HTTP")
    if served["tls"] and served["clientCertificateRequired"]:
        tls = ext.tls_config
        if tls is None or not tls.has_client_cert:
            report.add("error", scope, "the service requires a client certificate: set tlsConfig.certFile and keyFile")
            explained.setdefault("bind", "bind refuses a caller without a client certificate (above)")
    if served["tls"] and not ext.enable_https:
        report.add(
            "warning", scope, "enableHTTPS is false: tlsConfig is not used and the system roots verify the certificate"
        )
    return explained


def _scheduler_container(text: str) -> dict[str, Any] | None:
    """The ``kube-scheduler`` container of a static pod manifest (``{}`` for a Pod without one);
    ``None`` when ``text`` is not a Pod (then it is a KubeSchedulerConfiguration)."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    if not isinstance(doc, dict) or doc.get("kind") != "Pod":
        return None
    containers = ((doc.get("spec") or {}).get("containers")) or []
    return next((c for c in containers if isinstance(c, dict) and c.get("name") == "kube-scheduler"), {})


def _config_flag(container: dict[str, Any]) -> str | None:
    """The ``--config`` file kube-scheduler's container runs with, or ``None``."""
    words = [str(w) for w in (container.get("command") or []) + (container.get("args") or [])]
    for i, word in enumerate(words):
        if word.startswith("--config="):
            return word.removeprefix("--config=")
        if word == "--config" and i + 1 < len(words):
            return words[i + 1]
    return None


_NOT_WIRED = (
    "kube-scheduler's static pod runs without --config: it does not call the extender. kubeadm regenerates "
    "this file on upgrade; wire it with the rendered kubeadm/ files (ClusterConfiguration scheduler.extraArgs "
    "and extraVolumes, or --patches kubeadm/patches) and run the upgrade or `kubeadm init phase control-plane "
    "scheduler` again"
)


def _merge(report: Report, other: Report) -> Report:
    report.findings += other.findings
    return report


def _version_skew(report: Report, scope: str, image: str, kubeconfig: str, timeout: float) -> None:
    """Compare the kube-scheduler image tag of a static pod with the API server's version (``GET
    /version`` with ``kubeconfig``): newer than the API server is an error (the version-skew
    policy forbids it), more than one minor older a warning."""
    from app.kube.client import KubeClient, load_client

    tag = re.match(r"^.*:v?(\d+)\.(\d+)\.(\d+)$", image)
    if tag is None:
        report.add("warning", scope, f"cannot read a release from the kube-scheduler image {image!r}")
        return
    try:
        client = KubeClient(load_client(kubeconfig).api_client)
        try:
            version = client.server_version(timeout)
        finally:
            client.close()
    except Exception as exc:  # no credentials, an unreachable API server: reported, not raised
        report.add("warning", scope, f"cannot read the API server's version with {kubeconfig}: {exc}")
        return
    server = re.match(r"^v?(\d+)\.(\d+)", version)
    if server is None:
        report.add("warning", scope, f"cannot parse the API server's version {version!r}")
        return
    scheduler_minor, server_minor = int(tag.group(2)), int(server.group(2))
    release = f"v{tag.group(1)}.{tag.group(2)}.{tag.group(3)}"
    if (int(tag.group(1)), scheduler_minor) > (int(server.group(1)), server_minor):
        report.add(
            "error",
            scope,
            f"kube-scheduler {release} is newer than the API server {version}: the version-skew policy "
            "forbids it; render with --kubernetes-version equal to the API server's",
        )
    elif server_minor - scheduler_minor > 1:
        report.add(
            "warning",
            scope,
            f"kube-scheduler {release} is more than one minor release older than the API server {version}",
        )
    else:
        report.add("ok", scope, f"kube-scheduler {release} and the API server {version} are within the skew policy")


def check(
    path: str | Path,
    url: str | None = None,
    offline: bool = False,
    timeout: float = 5.0,
    kubeconfig: str | None = None,
) -> Report:
    """Run every check on the file at ``path``; ``url`` replaces the scheme, host and port of each
    ``urlPrefix`` for the live checks (``http://127.0.0.1:8888``). For kube-scheduler's static pod
    manifest, also whether it runs with ``--config`` and, with ``kubeconfig``, whether its image is
    within the version-skew policy of the API server. Never raises for a bad file."""
    report = Report()
    scope = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        report.add("error", scope, f"cannot read the file: {exc.strerror}")
        return report
    container = _scheduler_container(text)
    if container is not None:  # kube-scheduler's static pod: is it wired, and is it the right version?
        if kubeconfig:
            _version_skew(report, scope, str(container.get("image", "")), kubeconfig, timeout)
        config_path = _config_flag(container)
        if config_path is None:
            report.add("error", scope, _NOT_WIRED)
            return report
        report.add("ok", scope, f"kube-scheduler's static pod runs with --config={config_path}")
        return _merge(report, check(config_path, url=url, offline=offline, timeout=timeout))
    try:
        config = decode(text)
    except KubeConfigDecodeError as exc:
        for problem in exc.problems:
            report.add("error", scope, f"strict decoding: {problem}")
        return report
    report.add("ok", scope, "decodes strictly as kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration")
    problems = validate(config)
    for problem in problems:
        report.add("error", scope, f"validation: {problem}")
    if not problems:
        report.add("ok", scope, "passes kube-scheduler's validation (ValidateKubeSchedulerConfiguration)")
    extenders = config.extenders or []
    if not extenders:
        report.add("warning", scope, "no extenders: kube-scheduler will not call any extender")
    for i, ext in enumerate(extenders):
        _static_checks(report, i, ext)
        files = _tls_files(report, _scope(i, ext), ext)
        if not offline and ext.url_prefix:
            if files:
                _live_checks(report, i, ext, url, timeout)
            else:
                report.add(
                    "skipped",
                    _scope(i, ext),
                    "the checks against the running extender: they need the tlsConfig files above",
                )
    return report
