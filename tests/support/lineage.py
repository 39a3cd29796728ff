"""An OpenLineage client double: what the emitter sends, kept as the JSON a transport would send."""

from __future__ import annotations

import json
from typing import Any

from openlineage.client.serde import Serde


class Recorder:
    """An OpenLineage client that keeps what it is given, as JSON (what a transport sends)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def emit(self, event: Any) -> None:
        self.events.append(json.loads(Serde.to_json(event)))
