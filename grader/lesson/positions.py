"""Where a place in a lesson file is: the file line of a field (a pydantic error location or a YAML path), and of
a line inside a `|` block such as workload.setup or a TODO text, so every message `grader validate` prints
names the line an instructor can jump to, never the start of the block or of the file."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import yaml

from grader.lesson.check_specs import BUILT_IN_CHECKS
from grader.lesson.workload_spec import MODEL_KINDS

# Names pydantic puts in an error location for the branch of a tagged union: not fields of the YAML.
UNION_TAGS = {*MODEL_KINDS, *BUILT_IN_CHECKS, "lesson"}


def node_at(node: yaml.Node, loc: tuple) -> yaml.Node:
    """The deepest YAML node along a pydantic error location (or a YAML path)."""
    for key in loc:
        if isinstance(node, yaml.MappingNode) and key in UNION_TAGS and not any(k.value == key for k, _ in node.value):
            continue
        if isinstance(node, yaml.MappingNode):
            match = next((v for k, v in node.value if k.value == key), None)
            if match is None:
                # an unexpected key: point at the key itself
                match = next((k for k, _ in node.value if k.value == key), None)
            if match is None:
                return node
            node = match
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
            node = node.value[key]
        else:
            # pydantic adds union-branch names ("str", "dict[...]"): stay where we are
            continue
    return node


def line_of(root: yaml.Node, loc: tuple) -> int:
    """The 1-based file line of the field at `loc`: for a block mapping or list, the line of its key (`data:`),
    not of its first entry."""
    node = node_at(root, loc)
    if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and not node.flow_style and loc:
        parent = node_at(root, loc[:-1])
        if isinstance(parent, yaml.MappingNode):
            key = next((k for k, v in parent.value if v is node), None)
            if key is not None:
                return key.start_mark.line + 1
    return node.start_mark.line + 1


def first_content_line(node: yaml.Node) -> int:
    """The 1-based file line of a scalar's first line of text: the line after `|` or `>` for a block."""
    return node.start_mark.line + (2 if isinstance(node, yaml.ScalarNode) and node.style in ("|", ">") else 1)


def yaml_path(loc: tuple) -> str:
    """`checks[2].min_fraction`: the form messages and docs/authoring.md use."""
    out = ""
    for key in loc:
        out += f"[{key}]" if isinstance(key, int) else ("." if out else "") + str(key)
    return out


@dataclass
class Locator:
    """The file lines of one parsed lesson file."""

    root: yaml.Node | None

    def line(self, loc: tuple) -> int | None:
        """The line of the field at `loc`, or of its nearest ancestor that exists."""
        return line_of(self.root, loc) if self.root is not None else None

    def block_line(self, loc: tuple, line_in_block: int | None) -> int | None:
        """The file line of line `line_in_block` (1-based) of the text at `loc`; its first line where None."""
        if self.root is None:
            return None
        node = node_at(self.root, loc)
        if not isinstance(node, yaml.ScalarNode):
            return line_of(self.root, loc)
        return first_content_line(node) + (line_in_block or 1) - 1

    def strings(self, node: yaml.Node | None = None, loc: tuple = ()) -> Iterator[tuple[tuple, yaml.ScalarNode]]:
        """Every scalar value of the file with its YAML path."""
        node = self.root if node is None else node
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                yield from self.strings(v, (*loc, k.value))
        elif isinstance(node, yaml.SequenceNode):
            for i, v in enumerate(node.value):
                yield from self.strings(v, (*loc, i))
        elif isinstance(node, yaml.ScalarNode) and node.tag.endswith(":str"):
            yield loc, node


def todo_places(locator: Locator) -> list[tuple[tuple, int]]:
    """(path, file line) of each text of a lesson (from `grader new`) that still says TODO: the line of the
    TODO itself, inside a block too."""
    out = []
    for loc, node in locator.strings():
        if node.value.lstrip().startswith("TODO"):
            index = next(i for i, text in enumerate(node.value.splitlines(), 1) if "TODO" in text)
            out.append((loc, locator.block_line(loc, index) if node.style in ("|", ">") else node.start_mark.line + 1))
    return out


def line_named(message: str) -> int | None:
    """'its line 3 has ...': the line inside a block that a message about that block names."""
    match = re.search(r"\bits line (\d+)\b", message)
    return int(match.group(1)) if match else None
