"""Strict YAML reading: duplicate mapping keys are errors, not silently last-wins."""
from __future__ import annotations

import yaml

from .errors import CatalogError


class _StrictLoader(yaml.SafeLoader):
    pass


def _construct_mapping(loader, node, deep=False):
    loader.flatten_mapping(node)
    seen = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            mark = key_node.start_mark
            raise CatalogError("", "yaml", f"duplicate key {key!r} at line {mark.line + 1}, column {mark.column + 1}")
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def parse_yaml(text: str):
    """Parse one YAML document; raises ``CatalogError`` (code ``yaml``) on any problem."""
    try:
        return yaml.load(text, Loader=_StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except CatalogError:
        raise
    except yaml.YAMLError as error:
        raise CatalogError("", "yaml", str(error).replace("\n", " ")) from None
