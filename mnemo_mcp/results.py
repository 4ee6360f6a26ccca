"""A tool's result on the wire: its structured content, and beside it the same JSON as text,
compact. The SDK writes that text indented (2 spaces, a line per field): for a read of five
memories about a fifth of its characters are indentation and line breaks, which a client that
hands the model the text block rather than the structured content (Gemini CLI's `llmContent`)
makes the model read. The result is also serialized once instead of twice (the SDK dumps the
model to text, then again to the structured content)."""

from __future__ import annotations

import json
from typing import Any

from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel


class CompactResults(FuncMetadata):
    """The SDK's metadata of one tool, converting a result of the tool's own result model itself."""

    @classmethod
    def of(cls, meta: FuncMetadata) -> CompactResults:
        # Every field the SDK declares, so that one it adds later is carried over too.
        return cls(**{name: getattr(meta, name) for name in type(meta).model_fields})

    def convert_result(self, result: Any) -> Any:
        model = self.output_model
        if (
            self.output_schema is None
            or self.wrap_output
            or not isinstance(model, type)
            or not issubclass(model, BaseModel)
            or not isinstance(result, model)
        ):
            return super().convert_result(result)
        # Built by the tool through the model's own validation: what the SDK would check again.
        structured = result.model_dump(mode="json", by_alias=True)
        text = json.dumps(structured, ensure_ascii=False, separators=(",", ":"))
        return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=structured)
