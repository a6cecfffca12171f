"""The real tools that read rigcheck's files (promtool, xmllint), where installed, and pure-Python checks of the same
rules that run everywhere: Prometheus label and metric names promtool's lint takes, and pytest's junit-10.xsd."""

from __future__ import annotations

import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

from ci_tools import need
from prometheus_client.parser import text_string_to_metric_families

JUNIT_XSD = Path(__file__).parent / "data" / "junit-10.xsd"
XS = "{http://www.w3.org/2001/XMLSchema}"
# what `promtool check metrics` asks of names: snake_case (its lint flags a lower-case letter before a capital)
SNAKE_CASE = re.compile(r"^[a-z_][a-z0-9_]*$")


def tool(name: str) -> str:
    """The tool's path; where it is missing the test skips saying what to install, or under CI=true fails."""
    need(name)
    path = shutil.which(name)
    assert path is not None
    return path


def promtool_check(text: str) -> subprocess.CompletedProcess[str]:
    """`promtool check metrics` on the text, as node_exporter's users run it (exit 0: the lint found nothing)."""
    return subprocess.run([tool("promtool"), "check", "metrics"], input=text, capture_output=True, text=True)


def xmllint_validate(path: Path, schema: Path = JUNIT_XSD) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [tool("xmllint"), "--noout", "--schema", str(schema), str(path)], capture_output=True, text=True
    )


def prom_lint_problems(text: str) -> list[str]:
    """What promtool's lint would say of the names, read back through prometheus_client's own parser."""
    problems = []
    for family in text_string_to_metric_families(text):
        if not SNAKE_CASE.match(family.name):
            problems.append(f"metric {family.name}: not snake_case")
        if not family.documentation:
            problems.append(f"metric {family.name}: no HELP")
        for sample in family.samples:
            problems += [f"{family.name} label {n}: not snake_case" for n in sample.labels if not SNAKE_CASE.match(n)]
    return sorted(set(problems))


def _declarations(schema: Path) -> dict[str, dict]:
    """Each element junit-10.xsd declares: its attributes (required ones, patterns of their types), the elements
    it may hold, and whether it may hold text."""
    root = ET.parse(schema).getroot()
    patterns = {
        simple.get("name"): simple.find(f"{XS}restriction/{XS}pattern").get("value")
        for simple in root.findall(f"{XS}simpleType")
    }
    named_types = {c.get("name"): c for c in root.findall(f"{XS}complexType")}
    declared = {}
    for element in root.findall(f"{XS}element"):
        body = element.find(f"{XS}complexType")
        if body is None and element.get("type") in named_types:
            body = named_types[element.get("type")]
        if body is None:  # a simple type: text, nothing else
            declared[element.get("name")] = {"attributes": {}, "required": set(), "children": set(), "text": True}
            continue
        attributes = {a.get("name"): patterns.get(a.get("type")) for a in body.iter(f"{XS}attribute")}
        required = {a.get("name") for a in body.iter(f"{XS}attribute") if a.get("use") == "required"}
        children = {e.get("ref") or e.get("name") for e in body.iter(f"{XS}element")}
        text = body.get("mixed") == "true"
        declared[element.get("name")] = {
            "attributes": attributes,
            "required": required,
            "children": children,
            "text": text,
        }
    return declared


def junit_schema_problems(xml_text: str, schema: Path = JUNIT_XSD) -> list[str]:
    """Where the XML breaks junit-10.xsd: attributes it does not allow or lacks, elements where none may be, text
    in an element without it, a time that is not SUREFIRE_TIME. Order and counts of children are not checked."""
    declared = _declarations(schema)
    problems: list[str] = []
    root = ET.fromstring(xml_text)
    if root.tag != "testsuites" and root.tag != "testsuite":
        problems.append(f"root <{root.tag}>")

    def visit(node: ET.Element, path: str) -> None:
        rule = declared.get(node.tag)
        if rule is None:
            problems.append(f"{path}: <{node.tag}> is not in the schema")
            return
        for name, value in node.attrib.items():
            if name not in rule["attributes"]:
                problems.append(f"{path}: attribute {name!r} is not allowed")
            elif rule["attributes"][name] and not re.fullmatch(rule["attributes"][name], value):
                problems.append(f"{path}: {name}={value!r} does not match {rule['attributes'][name]}")
        problems.extend(f"{path}: attribute {name!r} is missing" for name in rule["required"] - set(node.attrib))
        if (node.text or "").strip() and not rule["text"]:
            problems.append(f"{path}: holds text")
        for child in node:
            if child.tag not in rule["children"]:
                problems.append(f"{path}: <{child.tag}> is not allowed in <{node.tag}>")
            visit(child, f"{path}/{child.tag}")

    visit(root, root.tag)
    return problems


def readme_prometheus_section() -> str:
    return (
        (Path(__file__).parent.parent / "README.md").read_text().split("\n## Prometheus\n", 1)[1].split("\n## ", 1)[0]
    )


def readme_relabel_config() -> str:
    """The README's scrape config that gives dcgm-exporter's series rigcheck's label names."""
    (config,) = re.findall(r"```yaml\n(.+?)\n```", readme_prometheus_section(), re.S)
    return config


def readme_join_query() -> str:
    """The README's PromQL that joins the two: the one inline code span that calls label_replace."""
    prose = re.sub(r"```.*?```", "", readme_prometheus_section(), flags=re.S).replace("\n", " ")
    (query,) = [span for span in re.findall(r"`([^`]+)`", prose) if "label_replace" in span]
    return query
