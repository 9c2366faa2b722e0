"""Helm charts: templates rendered with values.yaml (and a production values file) so the
grace periods and worker commands that live in values are read. Layout cut from a chart whose
worker Deployment takes its command and grace from values, with a quiet twin."""

from __future__ import annotations

from pathlib import Path

import pytest

from doctor.conftest import write
from tenure.doctor import diagnose
from tenure.doctor.helm import render

TEMPLATE = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "app.fullname" . }}-worker
  labels:
    {{- include "app.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.worker.replicas | default 1 }}
  template:
    spec:
      terminationGracePeriodSeconds: {{ .Values.worker.terminationGracePeriodSeconds | default 30 }}
      containers:
        - name: worker
          image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default "latest" }}"
          command:
            {{- toYaml .Values.worker.command | nindent 12 }}
          {{- if .Values.worker.resources }}
          resources:
            {{- toYaml .Values.worker.resources | nindent 12 }}
          {{- end }}
"""
VALUES = """image:
  repository: registry.example.com/shop/app
worker:
  replicas: 2
  command: ["celery", "-A", "shop", "worker", "-l", "info"]
"""
SETTINGS = """CELERY_BROKER_URL = "redis://redis:6379/0"
CELERY_TASK_TIME_LIMIT = 600
CELERY_TASK_SOFT_TIME_LIMIT = 540
"""


def test_render_keeps_every_line_and_substitutes_values() -> None:
    import yaml

    values = yaml.safe_load(VALUES)
    rendered = render(TEMPLATE, values)
    assert rendered.count("\n") == TEMPLATE.count("\n")
    assert "terminationGracePeriodSeconds: 30" in rendered
    assert '            ["celery", "-A", "shop", "worker", "-l", "info"]' in rendered
    assert "replicas: 2" in rendered and "{{" not in rendered


@pytest.mark.parametrize(
    ("production", "found"),
    [("", ["celery-grace-below-time-limit chart/templates/worker.yaml:11"]),
     ("worker:\n  terminationGracePeriodSeconds: 900\n", [])],
)  # fmt: skip
def test_chart_worker_grace_from_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, production: str, found: list[str]
) -> None:
    files = {"settings.py": SETTINGS, "chart/Chart.yaml": "name: app\nversion: 1.0.0\n",
             "chart/values.yaml": VALUES, "chart/templates/worker.yaml": TEMPLATE}  # fmt: skip
    if production:
        files["chart/values-production.yaml"] = production
    write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False, celery="settings.py")
    assert [f"{f.rule} {f.location}" for f in report.findings] == found


def test_render_of_missing_values_and_unknown_actions_is_empty_not_a_crash() -> None:
    """Cut from baserow's chart: toYaml/quote of values the chart does not set."""
    text = "a: {{ toYaml .Values.nope }}\nb: {{ quote .Values.nope }}\n{{ toJson .Values.x.y }}\n"
    assert render(text, {}) == "a: \nb: \n\n"


# Cut from a chart whose worker Deployments come from a list in values.yaml: a `range` over
# the workers, each container's args written by `with $worker.args` + `toYaml .`.
RANGE_TEMPLATE = """{{- range $worker := .Values.backend.celeryWorkers }}
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-celery-{{ $worker.name }}
spec:
  replicas: {{ $worker.replicas }}
  template:
    spec:
      containers:
        - name: {{ $.Chart.Name }}
          image: "{{ $.Values.image.repository }}:latest"
          {{- with $worker.command }}
          command:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          {{- with $worker.args }}
          args:
            {{- toYaml . | nindent 12 }}
          {{- end }}
{{- end }}
"""
RANGE_VALUES = """image:
  repository: registry.example.com/shop/app
backend:
  celeryWorkers:
    - name: default
      replicas: 1
      command: []
      args: ["celery", "-A", "shop.celery_app", "worker", "-l", "INFO"{limit}]
"""
UNBOUNDED_SETTINGS = 'CELERY_BROKER_URL = "redis://redis:6379/0"\n'


def test_render_binds_range_variables_and_with_dot_and_skips_empty_blocks() -> None:
    import yaml

    values = yaml.safe_load(RANGE_VALUES.format(limit=""))
    rendered = render(RANGE_TEMPLATE, values).split("\n")
    assert rendered.count("") >= 6 and len(rendered) == RANGE_TEMPLATE.count("\n") + 1
    assert rendered[7] == "  replicas: 1"
    assert "command:" not in "\n".join(rendered)  # `with []` is skipped, as Helm does
    assert rendered[19] == '            ["celery", "-A", "shop.celery_app", "worker", "-l", "INFO"]'


@pytest.mark.parametrize(
    ("limit", "found"),
    [("", ["celery-task-unbounded chart/templates/worker.yaml:12"]),
     (', "--time-limit=20"', [])],
)  # fmt: skip
def test_chart_workers_from_a_values_list(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: str, found: list[str]
) -> None:
    files = {"settings.py": UNBOUNDED_SETTINGS, "chart/Chart.yaml": "name: app\nversion: 1\n",
             "chart/values.yaml": RANGE_VALUES.format(limit=limit),
             "chart/templates/worker.yaml": RANGE_TEMPLATE}  # fmt: skip
    write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False, celery="settings.py")
    assert [f"{f.rule} {f.location}" for f in report.findings] == found


# Cut from a video-conferencing chart: one Deployment per instance of the transcribe worker,
# each instance's values merged over the worker's defaults (`merge $instance $.Values.x`),
# the command read from the merged map.
MERGE_TEMPLATE = """{{- range $idx, $instance := .Values.celeryTranscribe.instances }}
{{- $instanceValues := merge $instance $.Values.celeryTranscribe }}
---
apiVersion: apps/v1
kind: Deployment
spec:
  replicas: {{ $instanceValues.replicas }}
  template:
    spec:
      containers:
        - name: {{ $.Chart.Name }}
          {{- with $instanceValues.command }}
          command:
            {{- toYaml . | nindent 12 }}
          {{- end }}
{{- end }}
"""
MERGE_VALUES = """celeryTranscribe:
  command: ["celery", "-A", "summary.worker", "worker", "-Q", "transcribe"{limit}]
  replicas: 1
  instances:
    - name: default
      replicas: 2
"""


def test_render_reads_a_variable_assigned_by_merge_instance_keys_winning() -> None:
    import yaml

    rendered = render(MERGE_TEMPLATE, yaml.safe_load(MERGE_VALUES.format(limit=""))).split("\n")
    assert rendered[6] == "  replicas: 2"
    assert rendered[13] == (
        '            ["celery", "-A", "summary.worker", "worker", "-Q", "transcribe"]'
    )


@pytest.mark.parametrize(
    ("limit", "found"),
    [("", ["celery-task-unbounded chart/templates/transcribe.yaml:11"]),
     (', "--time-limit=20"', [])],
)  # fmt: skip
def test_chart_worker_command_from_merged_instance_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: str, found: list[str]
) -> None:
    tasks = "from celery import shared_task\n\n@shared_task(queue='transcribe')\ndef run(): ...\n"
    files = {"settings.py": UNBOUNDED_SETTINGS, "chart/Chart.yaml": "name: app\nversion: 1\n",
             "chart/values.yaml": MERGE_VALUES.format(limit=limit), "summary/tasks.py": tasks,
             "chart/templates/transcribe.yaml": MERGE_TEMPLATE}  # fmt: skip
    write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False, celery="settings.py")
    assert [f"{f.rule} {f.location}" for f in report.findings] == found


# Cut from a climate-model chart: one worker Deployment per key of a values map (`range $name,
# $spec := (omit .Values.providers "defaults")`), each spec merged over the defaults, the args
# built by `list` and `concat` inside an `if` and written by `toYaml $args | nindent 8` at the
# same indentation as `args:`; the grace comes from the merged spec.
BUILT_TEMPLATE = """{{- range $provider, $spec := (omit .Values.providers "defaults") -}}
{{- $spec := merge (deepCopy $.Values.defaults) $spec -}}
{{- $args := list "celery" "-A" "ref.celery" "worker" -}}
{{- if ne $provider "orchestrator" -}} {{- $args = concat $args (list "-Q" $provider) -}} {{- end }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "ref.fullname" $ }}-{{ $provider }}
spec:
  template:
    spec:
      {{- with $spec.terminationGracePeriodSeconds }}
      terminationGracePeriodSeconds: {{ . }}
      {{- end }}
      containers:
      - name: {{ $provider }}
        image: "{{ $spec.image.repository }}:{{ $spec.image.tag | default "latest" }}"
        args:
        {{- toYaml $args | nindent 8 }}
        {{- with $spec.resources }}
        resources:
          {{- toYaml . | nindent 12 }}
        {{- end }}
---
{{ end -}}
"""
BUILT_VALUES = """defaults:
  image:
    repository: ghcr.io/example/ref
  resources: {{}}
{grace}
providers:
  esmvaltool: {{}}
  pmp: {{}}
"""
BUILT_ARGS = '        ["celery", "-A", "ref.celery", "worker", "-Q", "esmvaltool"]'


def test_render_builds_args_with_list_concat_over_a_ranged_map() -> None:
    import yaml

    values = yaml.safe_load(BUILT_VALUES.format(grace=""))
    rendered = render(BUILT_TEMPLATE, values).split("\n")
    assert len(rendered) == BUILT_TEMPLATE.count("\n") + 1
    assert rendered[7] == "  name: -esmvaltool"  # keys in order, as Go ranges a map
    assert rendered[18] == "  " + BUILT_ARGS  # two deeper than `args:`, so YAML reads a value
    assert rendered[16] == '        image: "ghcr.io/example/ref:latest"'


def test_render_says_what_it_cannot_follow_under_args() -> None:
    text = 'args:\n{{- include "app.args" . | nindent 2 }}\ncommand: {{ tpl .Values.cmd $ }}\n'
    notes: list[str] = []
    render(text, {}, notes)
    assert notes == ["line 3: `{{ tpl .Values.cmd $ }}` not followed"]
    notes.clear()
    render('args:\n  {{- toYaml (list "celery" .Values.nope) | nindent 2 }}\n', {}, notes)
    assert notes == ['line 2: `{{ toYaml (list "celery" .Values.nope) | nindent 2 }}` not followed']


@pytest.mark.parametrize(
    ("grace", "found"),
    [("", ["celery-grace-below-time-limit chart/templates/providers.yaml:16"]),
     ("  terminationGracePeriodSeconds: 900", [])],
)  # fmt: skip
def test_chart_worker_args_built_by_template_functions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, grace: str, found: list[str]
) -> None:
    files = {"settings.py": SETTINGS, "chart/Chart.yaml": "name: ref\nversion: 1\n",
             "chart/values.yaml": BUILT_VALUES.format(grace=grace),
             "chart/templates/providers.yaml": BUILT_TEMPLATE}  # fmt: skip
    write(tmp_path, files)
    monkeypatch.chdir(tmp_path)
    report = diagnose(None, ".", history=False, celery="settings.py")
    assert [f"{f.rule} {f.location}" for f in report.findings] == found


def test_range_over_a_value_the_chart_does_not_set_renders_nothing_not_a_crash() -> None:
    text = "{{- range $k, $v := .Values.nope }}\na: {{ $v }}\n{{- end }}\n{{- range .Values.x }}\n"
    # An unknown value is rendered (its items unknown), as a `with` of one is.
    assert render(text + "b: 1\n{{- end }}\n", {"x": "text"}) == "\na: \n\n\nb: 1\n\n"
