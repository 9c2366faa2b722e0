"""Kubernetes manifests (multi-document): `terminationGracePeriodSeconds` (default 30 s), the
`preStop` hook that spends part of it before SIGTERM, memory limits, container command/args."""

from __future__ import annotations

import re
from typing import Any

from tenure.doctor.model import Setting, Skipped, Source, Value
from tenure.doctor.readers.common import ReadResult
from tenure.doctor.readers.units import k8s_memory_mb, seconds, signal_name
from tenure.doctor.readers.worker_command import find_worker, make_launch
from tenure.doctor.readers.yamlnodes import YMap, get_path

DEFAULT_GRACE_S = 30.0
# Where each workload kind keeps its pod template.
POD_SPEC_PATHS: dict[str, tuple[str, ...]] = {
    "Pod": ("spec",),
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    # Argo Rollouts: a Deployment with a progressive strategy, the same pod template.
    "Rollout": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}


def is_manifest(document: Any) -> bool:
    return isinstance(document, dict) and "apiVersion" in document and "kind" in document


def read_manifest(path: str, document: YMap) -> ReadResult:
    result = ReadResult(understood=True)
    kind = str(document.get("kind"))
    if kind == "List" and isinstance(document.get("items"), list):
        for item in document["items"]:
            if is_manifest(item):
                result.extend(read_manifest(path, item))
        return result
    spec_path = POD_SPEC_PATHS.get(kind)
    if spec_path is None:
        return result  # a Service, ConfigMap...: understood, nothing to read
    pod = get_path(document, *spec_path)
    name = str(get_path(document, "metadata", "name") or kind)
    if not isinstance(pod, YMap):
        result.skipped.append(Skipped(f"{path}:{document.line}", f"{kind} {name} has no pod spec"))
        return result
    containers = pod.get("containers")
    for container in containers if isinstance(containers, list) else []:
        if not isinstance(container, YMap):
            continue
        argv = _strings(container.get("command")) + _strings(container.get("args"))
        args = find_worker(argv)
        if args is None:
            continue
        line = container.line_of("args" if "args" in container else "command")
        container_name = f"{name}/{container.get('name', '?')}"
        result.launches.append(
            make_launch(
                platform="kubernetes",
                name=container_name,
                source=Source(path, line),
                args=args,
                platform_grace=_grace(path, pod, container, result),
                stop_signal=_signal(path, container),
                memory_limit=_memory(path, container),
                unit=Source(path, container.line),
            )
        )
    return result


def _strings(value: Any) -> list[str]:
    return [str(v) for v in value if v is not None] if isinstance(value, list) else []


def _grace(path: str, pod: YMap, container: YMap, result: ReadResult) -> Value | None:
    raw = pod.get("terminationGracePeriodSeconds")
    if raw is None:
        grace, at = DEFAULT_GRACE_S, Source(note="Kubernetes default")
    else:
        amount = seconds(raw)
        at = Source(path, pod.line_of("terminationGracePeriodSeconds"))
        if amount is None:
            result.skipped.append(
                Skipped(str(at), f"cannot read terminationGracePeriodSeconds {raw!r}")
            )
            return None
        grace = amount
    # The kubelet runs preStop first and sends SIGTERM only after it returns, all within the
    # same grace period: a `sleep 10` preStop leaves the worker 10 s less.
    pre_stop = _pre_stop_seconds(container)
    if pre_stop:
        label = f"Kubernetes terminationGracePeriodSeconds {grace:g} s minus preStop {pre_stop:g} s"
        return Value(label, max(grace - pre_stop, 0.0), "s", at)
    return Value("Kubernetes terminationGracePeriodSeconds", grace, "s", at)


def _pre_stop_seconds(container: YMap) -> float:
    pre_stop = get_path(container, "lifecycle", "preStop")
    if not isinstance(pre_stop, dict):
        return 0.0
    sleep = get_path(pre_stop, "sleep", "seconds")
    if sleep is not None:
        return seconds(sleep) or 0.0
    command = " ".join(_strings(get_path(pre_stop, "exec", "command")))
    match = re.search(r"\bsleep\s+(\d+(?:\.\d+)?)", command)
    return float(match.group(1)) if match else 0.0


def _signal(path: str, container: YMap) -> Setting:
    lifecycle = container.get("lifecycle")
    if isinstance(lifecycle, YMap) and "stopSignal" in lifecycle:
        name = signal_name(lifecycle["stopSignal"]) or str(lifecycle["stopSignal"])
        return Setting("Kubernetes stopSignal", name, Source(path, lifecycle.line_of("stopSignal")))
    return Setting("Kubernetes stop signal", "SIGTERM", Source(note="Kubernetes default"))


def _memory(path: str, container: YMap) -> Value | None:
    limits = get_path(container, "resources", "limits")
    if not isinstance(limits, YMap) or "memory" not in limits:
        return None
    amount = k8s_memory_mb(limits["memory"])
    if amount is None:
        return None
    return Value("Kubernetes memory limit", amount, "MB", Source(path, limits.line_of("memory")))
